// The session viewer's webview script (media/viewer.js) in a DOM (jsdom), driven by the messages the
// extension posts: following pi as it appends, with no change lost while a page is on its way.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { JSDOM } = require('jsdom');

const SCRIPT = fs.readFileSync(path.join(__dirname, '..', '..', 'media', 'viewer.js'), 'utf8');

/** The webview: the extension's page skeleton, the script running in it, what it posts back. */
function webview() {
  const dom = new JSDOM(
    '<div id="stats"></div><div id="path"></div><div id="entries"></div><div id="status"></div>',
    { runScripts: 'outside-only', pretendToBeVisual: true },
  );
  const posted = [];
  dom.window.acquireVsCodeApi = () => ({ postMessage: (message) => posted.push(message) });
  dom.window.HTMLElement.prototype.scrollIntoView = function () {};
  dom.window.eval(SCRIPT);
  const send = (message) => dom.window.dispatchEvent(new dom.window.MessageEvent('message', { data: message }));
  const shown = () => [...dom.window.document.querySelectorAll('#entries > .item')].map((e) => e.dataset.id);
  return { posted, send, shown };
}

/** The page of the path from `offset`, of a path of `total` entries e0, e1, ... */
function page(offset, count, total) {
  const items = [];
  for (let i = offset; i < Math.min(total, offset + count); i++) {
    items.push({ index: i, id: `e${i}`, parentId: i ? `e${i - 1}` : null, children: i + 1 < total ? 1 : 0, html: `<p>entry ${i}</p>` });
  }
  return { items, offset, total };
}

const loads = (posted) => posted.filter((m) => m.type === 'load');

test('the viewer follows pi appending; a change while a page is on its way is taken in after it', () => {
  const view = webview();
  view.send({ type: 'reset', page: page(0, 100, 3), following: true, path: '' });
  assert.deepEqual(view.shown(), ['e0', 'e1', 'e2']);

  view.send({ type: 'changed' }); // pi appended e3
  assert.deepEqual(loads(view.posted).map((m) => [m.purpose, m.offset]), [['follow', 2]]);
  view.send({ type: 'changed' }); // and e4, while the page of e3 is on its way
  assert.equal(loads(view.posted).length, 1, 'one page at a time');

  view.send({ type: 'page', purpose: 'follow', page: page(2, 100, 4) }); // the page asked before e4
  assert.deepEqual(view.shown(), ['e0', 'e1', 'e2', 'e3']);
  assert.deepEqual(loads(view.posted).map((m) => [m.purpose, m.offset]), [['follow', 2], ['follow', 3]], 'the change during the load is followed');

  view.send({ type: 'page', purpose: 'follow', page: page(3, 100, 5) });
  assert.deepEqual(view.shown(), ['e0', 'e1', 'e2', 'e3', 'e4']);
  assert.equal(loads(view.posted).length, 2, 'nothing more to ask for');
});

test('a change while a page is on its way that then fails is asked for again', () => {
  const view = webview();
  view.send({ type: 'reset', page: page(0, 100, 2), following: true, path: '' });
  view.send({ type: 'changed' });
  view.send({ type: 'changed' }); // while the follow page is on its way
  view.send({ type: 'error', message: 'the server was busy' });
  assert.deepEqual(loads(view.posted).map((m) => m.purpose), ['follow', 'follow'], 'asked again after the failure');
  view.send({ type: 'page', purpose: 'follow', page: page(1, 100, 4) });
  assert.deepEqual(view.shown(), ['e0', 'e1', 'e2', 'e3']);
});
