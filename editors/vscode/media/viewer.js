// The session viewer's webview: shows the entries the extension renders (already escaped HTML), asks
// for the next page as you scroll (and the previous one when you scroll up), keeps at most MAX_ITEMS
// entries in the page, and sends the buttons' actions back. No inline handlers: one listener each.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const list = document.getElementById('entries');
  const status = document.getElementById('status');
  const statsBox = document.getElementById('stats');
  const pathBox = document.getElementById('path');
  const PAGE = 100;
  const MAX_ITEMS = 500;
  const MARGIN = 1500; // px from an end of the page where the next page is asked for

  const state = { start: 0, end: 0, total: 0, following: true, loading: false, stale: false, lastId: null, changedWhileLoading: false };

  function post(message) {
    vscode.postMessage(message);
  }

  function setStatus(text) {
    status.textContent = text;
  }

  function describe() {
    if (state.total === 0) return 'No entries on this path.';
    const more = state.end < state.total ? ' · scroll for more' : '';
    return `Entries ${state.start + 1}–${state.end} of ${state.total}${more}`;
  }

  function makeItem(item) {
    const wrapper = document.createElement('div');
    wrapper.className = 'item';
    wrapper.dataset.index = String(item.index);
    wrapper.dataset.id = item.id;
    wrapper.dataset.parentId = item.parentId;
    wrapper.dataset.children = String(item.children);
    // item.html is made by the extension from escaped text (render.ts): no raw content reaches here
    wrapper.innerHTML = item.html;
    return wrapper;
  }

  function items() {
    return list.querySelectorAll(':scope > .item');
  }

  function updateEnds() {
    const all = items();
    state.start = all.length ? Number(all[0].dataset.index) : state.start;
    state.end = all.length ? Number(all[all.length - 1].dataset.index) + 1 : state.start;
    state.lastId = all.length ? all[all.length - 1].dataset.id : null;
    setStatus(describe());
    const last = all.length ? all[all.length - 1] : null;
    let footer = document.getElementById('path-end');
    if (footer) footer.remove();
    if (last && state.end === state.total && Number(last.dataset.children) > 0) {
      footer = document.createElement('div');
      footer.id = 'path-end';
      footer.className = 'path-end';
      footer.innerHTML = '<button data-action="continue">Continue below this entry</button>';
      list.after(footer);
    }
  }

  function scroller() {
    return document.scrollingElement || document.documentElement;
  }

  function append(page) {
    const fragment = document.createDocumentFragment();
    for (const item of page.items) fragment.appendChild(makeItem(item));
    list.appendChild(fragment);
    state.total = page.total;
    let all = items();
    while (all.length > MAX_ITEMS) {
      // drop from the top, keeping what is on screen where it is
      const first = all[0];
      const height = first.getBoundingClientRect().height;
      first.remove();
      scroller().scrollTop -= height;
      all = items();
    }
    updateEnds();
  }

  function prepend(page) {
    const before = scroller().scrollHeight;
    const fragment = document.createDocumentFragment();
    for (const item of page.items) {
      if (item.index < state.start) fragment.appendChild(makeItem(item));
    }
    list.insertBefore(fragment, list.firstChild);
    scroller().scrollTop += scroller().scrollHeight - before;
    state.total = page.total;
    let all = items();
    while (all.length > MAX_ITEMS) {
      all[all.length - 1].remove();
      all = items();
    }
    updateEnds();
  }

  function reset(page, focus) {
    list.textContent = '';
    state.start = page.offset;
    state.end = page.offset;
    append(page);
    if (focus === 'last') {
      const all = items();
      if (all.length) all[all.length - 1].scrollIntoView({ block: 'end' });
      else scroller().scrollTop = 0;
    } else if (typeof focus === 'number') {
      const target = list.querySelector(`:scope > .item[data-index="${focus}"]`);
      if (target) {
        target.scrollIntoView({ block: 'start' });
        target.classList.add('focus');
      }
    } else {
      scroller().scrollTop = 0;
    }
    maybeLoad();
  }

  function load(offset, limit, purpose) {
    if (state.loading && purpose !== 'replace') return;
    state.loading = true;
    state.stale = false;
    setStatus('Loading…');
    post({ type: 'load', offset, limit, purpose });
  }

  function maybeLoad() {
    if (state.loading) return;
    const el = scroller();
    const bottom = el.scrollHeight - (el.scrollTop + el.clientHeight);
    if (bottom < MARGIN && (state.end < state.total || state.stale)) {
      load(state.end, PAGE, 'append');
    } else if (el.scrollTop < MARGIN && state.start > 0) {
      const offset = Math.max(0, state.start - PAGE);
      load(offset, state.start - offset, 'prepend');
    }
  }

  window.addEventListener('scroll', () => maybeLoad(), { passive: true });

  window.addEventListener('message', (event) => {
    const message = event.data;
    switch (message.type) {
      case 'reset':
        state.loading = false;
        state.following = message.following;
        pathBox.innerHTML = message.path; // made by the extension: fixed text and escaped ids
        reset(message.page, message.focus);
        takeInMissedChange();
        break;
      case 'page':
        state.loading = false;
        if (message.purpose === 'append') append(message.page);
        else if (message.purpose === 'prepend') prepend(message.page);
        else if (message.purpose === 'follow') follow(message.page);
        else if (message.purpose === 'replace') reset(message.page, undefined);
        if (!takeInMissedChange()) maybeLoad();
        break;
      case 'stats':
        statsBox.innerHTML = message.html; // made by the extension from escaped text
        break;
      case 'branches':
        showBranches(message.index, message.items);
        break;
      case 'changed':
        changed();
        break;
      case 'error':
        state.loading = false;
        setStatus(`Error: ${message.message}`);
        takeInMissedChange(); // tried once more: the file changed after the failed request was sent
        break;
    }
  });

  /** pi appended: when the end of the path is on the page, take the new entries in. */
  function changed() {
    if (state.loading) {
      state.changedWhileLoading = true; // taken in once the page on its way is shown
      return;
    }
    if (state.following && state.end >= state.total) load(Math.max(0, state.end - 1), PAGE, 'follow');
    else if (state.following) state.stale = true; // the next page asked for brings the new total
  }

  /** After a load: what pi appended while it was on its way (a change then waits, see changed). */
  function takeInMissedChange() {
    if (!state.changedWhileLoading) return false;
    state.changedWhileLoading = false;
    changed();
    return true;
  }

  function follow(page) {
    const first = page.items[0];
    if (first && first.id === state.lastId && first.index === state.end - 1) {
      append({ ...page, items: page.items.slice(1) });
      const all = items();
      if (all.length) all[all.length - 1].scrollIntoView({ block: 'end', behavior: 'smooth' });
    } else {
      // the path changed under the page (a reload, another leaf): show it anew from where it was
      load(state.start, PAGE, 'replace');
    }
  }

  function showBranches(index, branches) {
    const item = list.querySelector(`:scope > .item[data-index="${index}"]`);
    if (!item) return;
    let menu = item.querySelector('.branch-list');
    if (menu) menu.remove();
    menu = document.createElement('ol');
    menu.className = 'branch-list';
    const current = item.dataset.id;
    for (const branch of branches) {
      const li = document.createElement('li');
      const button = document.createElement('button');
      button.className = 'link';
      button.dataset.action = 'switch';
      button.dataset.target = branch.id;
      button.innerHTML = branch.html; // escaped by the extension
      if (branch.id === current) li.className = 'current';
      li.appendChild(button);
      menu.appendChild(li);
    }
    const switcher = item.querySelector('.switcher');
    (switcher || item.firstChild).after(menu);
  }

  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-action]') : null;
    if (!button) return;
    const item = button.closest('.item');
    const id = item ? item.dataset.id : undefined;
    const index = item ? Number(item.dataset.index) : undefined;
    switch (button.dataset.action) {
      case 'switch':
        post({ type: 'switch', target: button.dataset.target, index });
        break;
      case 'branches':
        post({ type: 'branches', index, parentId: item.dataset.parentId });
        break;
      case 'reveal':
        post({ type: 'reveal', line: Number(button.dataset.line) });
        break;
      case 'context':
        post({ type: 'context', id });
        break;
      case 'tree':
        post({ type: 'tree', id });
        break;
      case 'openText':
        post({ type: 'openText' });
        break;
      case 'toLeaf':
        post({ type: 'toLeaf' });
        break;
      case 'jump':
        post({ type: 'jump', where: button.dataset.where });
        break;
      case 'continue': {
        const all = items();
        if (all.length) post({ type: 'continue', id: all[all.length - 1].dataset.id });
        break;
      }
    }
  });

  post({ type: 'ready' });
})();
