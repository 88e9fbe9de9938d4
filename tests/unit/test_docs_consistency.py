"""The user's documentation says what the code does: every link and anchor resolves; every ``pi/*``
method, error code and example parameter named is protocol/'s (and every method of protocol/ is
documented somewhere); every diagnostic code, deviation and numbered section cited exists; every
environment variable, editor setting, editor command and LSP request named is the code's; every
``pi-session`` command line shown is one the command's parser accepts, and every option of a command
is named; every test and file of this repository cited exists.

Each check reads the Markdown as a user sees it: fenced code blocks and inline code are told apart
from prose, so a link written inside code is not a link and a command in prose is not a command."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pi_session_server.analysis.codes import CODES
from pi_session_server.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
# the pages a user reads; protocol/README.md and editors/README.md are linked from them
USER_PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("editors/*/README.md")])
LINKED_PAGES = [ROOT / "editors" / "README.md", ROOT / "protocol" / "README.md"]
PROTOCOL = json.loads((ROOT / "protocol" / "pi-session.openrpc.json").read_text(encoding="utf-8"))
PACKAGE = ROOT / "pi_session_server"


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@dataclass(frozen=True)
class Page:
    """A Markdown page split the way it renders: its prose (code blanked out, line numbers kept),
    its fenced code blocks and its inline code spans."""

    path: Path
    prose: str
    text: str  # the prose with its inline code
    blocks: list[tuple[str, str]]  # (info string, content)
    spans: list[str]

    @classmethod
    def read(cls, path: Path) -> Page:
        text = path.read_text(encoding="utf-8")
        blocks: list[tuple[str, str]] = []
        prose_lines: list[str] = []
        fence: str | None = None
        info = ""
        body: list[str] = []
        for line in text.split("\n"):
            stripped = line.strip()
            opening = re.match(r"`{3,}|~{3,}", stripped) if fence is None else None
            if opening is not None:
                fence = opening.group(0)
                info, body = stripped[len(fence) :].strip(), []
                prose_lines.append("")
            elif fence is not None and stripped.startswith(fence):
                blocks.append((info, "\n".join(body)))
                fence = None
                prose_lines.append("")
            elif fence is not None:
                body.append(line)
                prose_lines.append("")
            elif line.startswith("    ") and (not prose_lines or prose_lines[-1] == ""):
                blocks.append(("", line[4:]))  # an indented code block
                prose_lines.append("")
            else:
                prose_lines.append(line)
        with_spans = "\n".join(prose_lines)
        spans = [m.group(2) for m in re.finditer(r"(`+)(.+?)\1", with_spans, re.S)]
        prose = re.sub(r"(`+)(.+?)\1", lambda m: re.sub(r"[^\n]", " ", m.group(0)), with_spans, flags=re.S)
        return cls(path, prose, with_spans, blocks, spans)

    @property
    def code(self) -> str:
        """Every piece of code on the page, one per line group."""
        return "\n".join([*(content for _info, content in self.blocks), *self.spans])

    @property
    def everything(self) -> str:
        return self.prose + "\n" + self.code


PAGES = {path: Page.read(path) for path in [*USER_PAGES, *LINKED_PAGES] if path.exists()}


# --- links and anchors ---------------------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    page = PAGES.get(path) or Page.read(path)
    found: set[str] = set()
    seen: dict[str, int] = {}
    # headings are read from the raw lines of prose (inline code is blanked in page.prose)
    raw = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(page.prose.split("\n")):
        if re.match(r"#{1,6} ", line):
            anchor = github_anchor(raw[number].lstrip("#").strip())
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    found.update(re.findall(r'<a (?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")))
    return found


def links_of(page: Page) -> Iterator[str]:
    yield from re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", page.prose)
    yield from re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", page.prose, re.M)


def broken_links(page: Page) -> list[str]:
    broken = []
    for target in links_of(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.path.parent / file_part).resolve() if file_part else page.path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    return broken


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    assert broken_links(PAGES[path]) == []


def test_github_anchors_are_made_as_github_makes_them() -> None:
    assert github_anchor("10. pi versions") == "10-pi-versions"
    assert github_anchor("Neovim (0.11 or newer)") == "neovim-011-or-newer"
    assert github_anchor("Children (go to implementation)") == "children-go-to-implementation"
    assert github_anchor("In the terminal: `pi-session check`") == "in-the-terminal-pi-session-check"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Top\n\n## Second part\n", encoding="utf-8")
    page_path = tmp_path / "b.md"
    page_path.write_text(
        "[ok](a.md#second-part) [gone](missing.md) [no anchor](a.md#third)\n"
        "`[in code](missing.md)`\n\n```\n[in a block](missing.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(Page.read(page_path)) == [
        "missing.md: no such file",
        "a.md#third: no heading #third",
    ]


# --- the wire protocol ---------------------------------------------------------------------------

METHODS = {method["name"] for method in PROTOCOL["methods"]}
NOTIFICATIONS = {notification["name"] for notification in PROTOCOL["x-notifications"]}
# `pi/open`, not the `.pi/agent` of a path
RPC_NAME = re.compile(r"(?<![\w./~-])pi/[A-Za-z]+")


def rpc_names(page: Page) -> set[str]:
    return set(RPC_NAME.findall(page.everything))


@pytest.mark.parametrize("path", [*USER_PAGES, *LINKED_PAGES], ids=page_id)
def test_every_method_named_in_the_docs_is_in_the_protocol(path: Path) -> None:
    if path not in PAGES:
        pytest.skip("no such page")
    assert rpc_names(PAGES[path]) - METHODS - NOTIFICATIONS == set()


def test_every_method_of_the_protocol_is_documented_somewhere() -> None:
    documented = set().union(*(rpc_names(page) for page in PAGES.values()))
    assert (METHODS | NOTIFICATIONS) - documented == set()


def test_the_rpc_name_pattern_leaves_paths_alone(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("see `~/.pi/agent/sessions` and `pi/open`, pi/getTree", encoding="utf-8")
    page = Page.read(tmp_path / "x.md")
    assert RPC_NAME.findall("~/.pi/agent/sessions .pi/bin pi/open (pi/getTree)") == ["pi/open", "pi/getTree"]
    assert rpc_names(page) == {"pi/open", "pi/getTree"}


# JSON-RPC's and LSP's own: parse error, invalid request, method not found, invalid params, internal
# error, server not initialized, request cancelled, content modified
JSON_RPC_CODES = {-32700, -32600, -32601, -32602, -32603, -32002, -32800, -32801}
ERRORS_BY_CODE = {error["code"]: name for name, error in PROTOCOL["components"]["errors"].items()}


@pytest.mark.parametrize("path", [*USER_PAGES, *LINKED_PAGES], ids=page_id)
def test_every_error_code_named_is_the_protocol_s(path: Path) -> None:
    if path not in PAGES:
        pytest.skip("no such page")
    text = PAGES[path].text
    names = set(ERRORS_BY_CODE.values())
    wrong = []
    for code, name in re.findall(r"(-32\d{3})`?\s+`?([A-Z][A-Za-z]+)\b", text):
        if name in names and ERRORS_BY_CODE.get(int(code)) != name:
            wrong.append(f"{code} {name} (the protocol: {ERRORS_BY_CODE.get(int(code))})")
    for code in re.findall(r"(?<![\d.])-32\d{3}\b", text):
        if int(code) not in ERRORS_BY_CODE and int(code) not in JSON_RPC_CODES:
            wrong.append(f"{code}: no such code")
    assert wrong == []


def example_requests(page: Page) -> Iterator[tuple[str, set[str]]]:
    """Each ``request("pi/...", {...})`` of the page's code, with the parameter names it passes."""
    for match in re.finditer(r"request\(\s*\"(pi/\w+)\",\s*\{([^}]*)\}", page.code):
        yield match.group(1), set(re.findall(r"\"(\w+)\"\s*:", match.group(2)))


def test_the_parameters_of_every_example_request_are_the_method_s() -> None:
    params = {method["name"]: {param["name"] for param in method["params"]} for method in PROTOCOL["methods"]}
    examples = [example for page in PAGES.values() for example in example_requests(page)]
    assert examples, "the README's sidecar example is gone"
    for method, names in examples:
        assert names - params[method] == set(), method


def test_initialization_options_named_are_the_server_s() -> None:
    from pi_session_server.server.app import InitializationOptions

    known = set(InitializationOptions.__struct_encode_fields__)
    named: set[str] = set()
    for page in PAGES.values():
        for sentence in re.findall(r"initializationOptions`?:((?:\s*`\w+`,?)+)", page.text):
            named.update(re.findall(r"`(\w+)`", sentence))
    assert named, "no page lists the initializationOptions any more"
    assert named - known == set()


# --- diagnostic codes ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_diagnostic_code_named_exists(path: Path) -> None:
    named = set(re.findall(r"\bPI\d{3}\b", PAGES[path].everything))
    ranges = re.findall(r"\b(PI\d{3})[\u2013-](PI\d{3})\b", PAGES[path].everything)
    assert named - set(CODES) == set()
    for first, last in ranges:
        assert first in CODES and last in CODES, f"{first} to {last}"


def test_every_diagnostic_code_has_its_row_and_every_row_a_code() -> None:
    page = PAGES[ROOT / "docs" / "DIAGNOSTICS.md"]
    rows = re.findall(r"^\| (PI\d{3}) \|", page.prose, re.M)
    first_table = rows[: len(CODES)]
    assert first_table == sorted(CODES)


def test_the_default_repairs_named_are_the_command_s() -> None:
    from pi_session_server.analysis.autofix import SAFE_CODES

    page = PAGES[ROOT / "docs" / "DIAGNOSTICS.md"]
    sentence = re.search(r"By default only ([^;]*);", page.prose.replace("\n", " "))
    assert sentence is not None
    assert set(re.findall(r"PI\d{3}", sentence.group(1))) == set(SAFE_CODES)


# --- environment variables and settings ----------------------------------------------------------


def package_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py"))


def source_of_the_tests() -> str:
    """The tests read the variables that choose what they run (the reference runner, long runs)."""
    return "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py"))


# named in the docs as what pi's own command line reads, which this package does not
PI_S_OWN = {"PI_CODING_AGENT_SESSION_DIR"}
ENVIRONMENT_VARIABLE = re.compile(r"\$?\b((?:PI|XDG)_[A-Z][A-Z0-9_]*)\b")


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_environment_variable_named_is_read_by_the_code(path: Path) -> None:
    source = package_source() + source_of_the_tests()
    named = set(ENVIRONMENT_VARIABLE.findall(PAGES[path].everything)) - PI_S_OWN
    assert {name for name in named if f'"{name}"' not in source} == set()


def test_every_index_variable_the_code_reads_is_in_the_configuration_page() -> None:
    read = set(re.findall(r"\"(PI_SESSION_[A-Z_]+)\"", package_source()))
    page = PAGES[ROOT / "docs" / "CONFIGURATION.md"]
    assert read - set(ENVIRONMENT_VARIABLE.findall(page.everything)) == set()


def vscode_settings() -> set[str]:
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    configuration = package["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    return {name for section in sections for name in section["properties"]}


SETTING = re.compile(r"\bpiSession\.[a-zA-Z]+(?:\.[a-zA-Z]+)*")


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_vscode_setting_named_exists(path: Path) -> None:
    # piSession.viewer: the viewer's id (workbench.editorAssociations), not a setting
    named = {name for name in SETTING.findall(PAGES[path].everything) if name != "piSession.viewer"}
    assert named - vscode_settings() == set()


def test_every_vscode_setting_is_in_the_extension_s_readme() -> None:
    page = PAGES[ROOT / "editors" / "vscode" / "README.md"]
    assert vscode_settings() - set(SETTING.findall(page.everything)) == set()


# --- the command line ----------------------------------------------------------------------------


def subcommand_options(name: str) -> set[str]:
    """The option strings of ``pi-session NAME``, from its help (the parser the command adds its
    arguments to, made as ``cli.build_parser`` makes it)."""
    parser = argparse.ArgumentParser(prog=f"pi-session {name}")
    importlib.import_module(f"pi_session_server.commands.{COMMANDS[name][0]}").add_arguments(parser)
    return set(re.findall(r"(?<![\w-])(--?[a-z][-a-z]*)", parser.format_help()))


def command_lines(page: Page) -> Iterator[list[str]]:
    """Every ``pi-session ...`` line of the page's code blocks, as the shell splits it, without
    its comment."""
    for _info, content in page.blocks:
        for line in content.split("\n"):
            if not re.match(r"\s*(\$ )?\S*pi-session ", line) or "[" in line:  # "[" : a synopsis
                continue
            words = shlex.split(line.replace("…", "x"), comments=True)
            yield words[1 if words[0] != "$" else 2 :]


def parse_error(words: list[str]) -> str | None:
    """What the parser of ``pi-session`` says of these arguments (None: it accepts them)."""
    complaint = io.StringIO()
    try:
        with contextlib.redirect_stderr(complaint):
            args = build_parser(words).parse_args(words)
    except SystemExit:
        return complaint.getvalue().strip().splitlines()[-1]
    return None if args.command else "no subcommand"


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_command_line_shown_is_accepted(path: Path) -> None:
    refused = [(words, parse_error(words)) for words in command_lines(PAGES[path])]
    assert [(words, error) for words, error in refused if error] == []


OPTION = re.compile(r"(?<![\w/.-])(--?[a-z](?:[a-z-]*[a-z])?)(?![\w-])")


def options_named(text: str) -> Iterator[tuple[str, str]]:
    """(subcommand, option) for each option written after ``pi-session SUB`` or ``SUB`` in code, up to
    the end of the line, a shell comment or the next command."""
    names = "|".join(COMMANDS)
    for line in text.split("\n"):
        line = line.split(" #")[0]
        pieces = re.split(rf"(?<![\w/.-])({names})(?![\w-])", line)
        for command, rest in zip(pieces[1::2], pieces[2::2], strict=True):
            rest = re.split(r"&&|;| \| ", rest)[0]
            for option in OPTION.findall(rest):
                yield command, option


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_option_shown_with_a_subcommand_exists(path: Path) -> None:
    page = PAGES[path]
    unknown = []
    for code in [*page.spans, *(content for _info, content in page.blocks)]:
        for command, option in options_named(code):
            if option not in subcommand_options(command):
                unknown.append(f"{command} {option}")
    assert unknown == []


def test_a_wrong_command_line_or_option_is_found() -> None:
    assert parse_error(["tree", "FILE"]) is None
    assert parse_error(["tree", "FILE", "--leaf", "x"]) is not None
    assert parse_error(["repair", "F", "-o", "O", "--in-place"]) is not None
    assert parse_error(["lint", "FILE"]) is not None
    assert list(options_named("serve --watch-interval SECONDS --log-file PATH")) == [
        ("serve", "--watch-interval"),
        ("serve", "--log-file"),
    ]
    assert list(options_named("pi-session check FILE --json  # --all")) == [("check", "--json")]
    assert [o for _c, o in options_named("check [--progress|--no-progress] [-q]")] == [
        "--progress",
        "--no-progress",
        "-q",
    ]


def pi_session_options() -> set[str]:
    """The options of every subcommand, and those ``pi-session`` itself takes (``--version``)."""
    top = set(re.findall(r"(?<![\w-])(--?[a-z][-a-z]*)", build_parser().format_help()))
    return top.union(*(subcommand_options(name) for name in COMMANDS))


# options of the other programs the pages run: pip, python, pytest, mkdir, ln, code, pi
OTHER_PROGRAMS_OPTIONS = {
    *("-e", "-m", "-p", "-s", "--install-extension"),
    *("--session-dir", "--resume", "--continue", "--session"),  # pi's, where it keeps its sessions
}


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_option_in_code_is_one_a_program_takes(path: Path) -> None:
    test_suite = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    shown = set(OPTION.findall(PAGES[path].code))
    unknown = shown - pi_session_options() - OTHER_PROGRAMS_OPTIONS
    assert {option for option in unknown if f'"{option}"' not in test_suite} == set()


# --- the language server -------------------------------------------------------------------------

# textDocument/<request> -> the capability that announces it
CAPABILITY = {
    "codeAction": "codeActionProvider",
    "codeLens": "codeLensProvider",
    "completion": "completionProvider",
    "definition": "definitionProvider",
    "diagnostic": "diagnosticProvider",
    "documentHighlight": "documentHighlightProvider",
    "documentSymbol": "documentSymbolProvider",
    "foldingRange": "foldingRangeProvider",
    "hover": "hoverProvider",
    "implementation": "implementationProvider",
    "inlayHint": "inlayHintProvider",
    "references": "referencesProvider",
    "selectionRange": "selectionRangeProvider",
}


def documented_requests() -> set[str]:
    page = PAGES[ROOT / "docs" / "LANGUAGE-SERVER.md"]
    return set(re.findall(r"^\| [^|]*`textDocument/(\w+)`", page.text, re.M))


def test_the_language_server_page_lists_what_the_server_announces() -> None:
    from in_process_server import InProcess

    running = InProcess()
    try:
        answer = running.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    finally:
        running.close()
    capabilities = answer["result"]["capabilities"]
    commands = set(capabilities["executeCommandProvider"]["commands"])
    named = set().union(*(re.findall(r"`(pi\.session\.\w+)`", page.text) for page in PAGES.values()))
    assert named == commands
    # executeCommandProvider: the repair commands a code action runs (DIAGNOSTICS.md, "Repairs")
    announced = {name for name in capabilities if name.endswith("Provider")} - {"executeCommandProvider"}
    documented = documented_requests()
    assert documented - set(CAPABILITY) == set(), "a request this test does not know: add it to CAPABILITY"
    assert {CAPABILITY[request] for request in documented} == announced


def test_the_vscode_settings_table_gives_the_extension_s_defaults() -> None:
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    configuration = package["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    defaults = {
        name: spec.get("default") for section in sections for name, spec in section["properties"].items()
    }
    text = (ROOT / "editors" / "vscode" / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(piSession\.[\w.]+)` \| `([^`]*)` \|", text, re.M)
    assert {name for name, _ in rows} == set(defaults)
    for name, shown in rows:
        default = defaults[name]
        assert shown in (json.dumps(default), default), name


def test_the_vscode_commands_listed_are_the_extension_s() -> None:
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    titles = {command["title"] for command in package["contributes"]["commands"]}
    text = (ROOT / "editors" / "vscode" / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"^- Commands: (.*?)\n\n", text, re.M | re.S)
    assert listed is not None
    assert {" ".join(t.split()) for t in re.findall(r"\*\*([^*]+)\*\*", listed.group(1))} - titles == set()


# --- the Neovim plugin ---------------------------------------------------------------------------

NEOVIM = ROOT / "editors" / "neovim"


def test_every_neovim_command_named_exists() -> None:
    plugin = (NEOVIM / "plugin" / "pi_session.lua").read_text(encoding="utf-8")
    defined = set(re.findall(r"nvim_create_user_command\('(\w+)'", plugin))
    named = set().union(*(re.findall(r":(PiSession\w+)", page.text) for page in PAGES.values()))
    assert named, "no page names a Neovim command any more"
    assert named - defined == set()


def test_every_neovim_setup_option_named_exists() -> None:
    config = (NEOVIM / "lua" / "pi_session" / "config.lua").read_text(encoding="utf-8")
    defaults = config[config.index("M.defaults = {") : config.index("\n}\n")]
    options = set(re.findall(r"^  (\w+) = ", defaults, re.M))
    named: set[str] = set()
    for page in PAGES.values():
        named.update(re.findall(r"setup option `(\w+)`", page.text.replace("\n", " ")))
        named.update(re.findall(r"`(\w+)` in Neovim", page.text.replace("\n", " ")))
        for info, content in page.blocks:
            for call in re.findall(r"setup\(\{(.*?)\}\)", content, re.S) if info == "lua" else []:
                named.update(re.findall(r"(\w+) = ", call))
    assert {"cmd", "pi_version"} <= named
    assert named - options == set()


# --- the tests the pages cite --------------------------------------------------------------------


def defined_tests_by_file() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        names = set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
        found.setdefault(path.name, set()).update(names)
    return found


def missing_tests(text: str, tests: dict[str, set[str]]) -> list[str]:
    """The tests ``text`` cites (``file.py::test_name``, ``::test_name`` in any test file,
    ``test_prefix_*``) that no test file defines."""
    everywhere = set().union(*tests.values())
    missing = []
    for file, name, star in re.findall(r"(?:\b(test_\w+\.py))?::(test_\w+?)(\*?)(?![\w*])", text):
        if file and file not in tests:
            missing.append(f"{file}: no such test file")
            continue
        candidates = tests[file] if file else everywhere
        if not any(test == name or (star and test.startswith(name)) for test in candidates):
            missing.append(f"{file}::{name}{star}")
    for file in re.findall(r"\b(test_\w+\.py)\b", text):
        if file not in tests:
            missing.append(f"{file}: no such test file")
    return missing


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_test_a_page_cites_exists(path: Path) -> None:
    assert missing_tests(PAGES[path].text, defined_tests_by_file()) == []


def test_a_test_cited_that_is_gone_is_found() -> None:
    tests = {"test_a.py": {"test_one", "test_refresh_all"}, "test_b.py": {"test_two"}}
    text = "`test_a.py::test_one`, `::test_two`, `test_a.py::test_two`, `::test_refresh_*`, `test_c.py`"
    assert missing_tests(text, tests) == ["test_a.py::test_two", "test_c.py: no such test file"]


# the project's own issue numbers ("issue 20, 4"): a reader cannot look them up
INTERNAL_ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


@pytest.mark.parametrize("path", [*USER_PAGES, *LINKED_PAGES, ROOT / "bench" / "RESULTS.md"], ids=page_id)
def test_no_page_cites_an_issue_number_a_reader_cannot_see(path: Path) -> None:
    """A page says the thing itself (a goal, a reason), not the issue it came from."""
    lines = path.read_text(encoding="utf-8").split("\n")
    assert [f"{n}: {line}" for n, line in enumerate(lines, 1) if INTERNAL_ISSUE.search(line)] == []


def test_every_deviation_named_is_in_the_deviations_page() -> None:
    listed = set(re.findall(r"^\| (D\d+) \|", PAGES[ROOT / "docs" / "DEVIATIONS.md"].text, re.M))
    assert listed, "DEVIATIONS.md lists no deviation any more"
    for path in USER_PAGES:
        text = PAGES[path].prose
        named = set(re.findall(r"\b(D\d+)\b", text))
        for first, last in re.findall(r"\bD(\d+)[\u2013-]D(\d+)\b", text):
            named.update(f"D{n}" for n in range(int(first), int(last) + 1))
        assert named - listed == set(), page_id(path)


VECTORS = ROOT / "tests" / "conformance" / "vectors"


def vectors_missing(text: str) -> list[str]:
    """The conformance vectors ``text`` cites (``vector `name` ``, ``vectors `a`, `dev-03-*` ``)
    that have no scenario under tests/conformance/vectors/."""
    missing = []
    for citation in re.findall(r"\bvectors? ((?:`[^`]+`(?:, )?)+)", text):
        for name in re.findall(r"`([^`]+)`", citation):
            if not list(VECTORS.glob(f"{name}.scenario.json")):
                missing.append(name)
    return missing


def test_every_conformance_vector_a_deviation_cites_exists() -> None:
    text = PAGES[ROOT / "docs" / "DEVIATIONS.md"].text
    assert len(re.findall(r"\bvectors? `", text)) >= 10, "the page cites no vectors any more"
    assert vectors_missing(text) == []


def test_a_vector_cited_that_is_gone_is_found() -> None:
    text = "vectors `load-10-cycle-hang`, `dev-03-*`; vector `extra/x-99-gone`, `dev-99-*`"
    assert vectors_missing(text) == ["extra/x-99-gone", "dev-99-*"]


def numbered_sections(path: Path) -> set[str]:
    return set(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", path.read_text(encoding="utf-8"), re.M))


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_section_cited_by_page_and_number_exists(path: Path) -> None:
    """``FORMAT.md §9.1``, ``[API.md](API.md) §4.2``: the section is a heading of that page."""
    text = PAGES[path].text.replace("\n", " ")
    missing = []
    for page, number in re.findall(r"\b([A-Z-]+\.md)\)?\]?(?:\([^)]*\))? §(\d+(?:\.\d+)*)", text):
        if number not in numbered_sections(ROOT / "docs" / page):
            missing.append(f"{page} §{number}")
    assert missing == []


# --- the library ---------------------------------------------------------------------------------


def keyword_calls(page: Page) -> Iterator[tuple[str, set[str]]]:
    """Each ``SessionManager`` call a code span shows with keywords (``open(path, index=False)``):
    the method and the keywords."""
    from pi_session_server.session import SessionManager

    for span in page.spans:
        call = re.fullmatch(r"(?:SessionManager\.|sm\.|manager\.)?(\w+)\((.*)\)", span.strip())
        if call and hasattr(SessionManager, call.group(1)) and "=" in call.group(2):
            yield call.group(1), set(re.findall(r"(\w+)=", call.group(2)))


def test_every_keyword_shown_on_a_manager_call_is_a_parameter() -> None:
    import inspect

    from pi_session_server.session import SessionManager

    calls = [call for page in PAGES.values() for call in keyword_calls(page)]
    assert len(calls) > 10, "the pages show no manager calls with keywords any more"
    for method, keywords in calls:
        parameters = set(inspect.signature(getattr(SessionManager, method)).parameters)
        assert keywords - parameters == set(), method


# the places a path in the pages' code is relative to: the clone, the package, the tests, the page
PATH_BASES = (ROOT, PACKAGE, ROOT / "tests")
# pi's own files, which the pages name in pi's repository
PI_S_FILES = re.compile(r"^(?:src|utils|packages)/")


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_file_of_ours_a_page_names_exists(path: Path) -> None:
    named = set()
    for span in PAGES[path].spans:
        named.update(re.findall(r"(?<![\w.])((?:[\w.-]+/)+[\w.-]+\.(?:py|ts|lua|json|md|sh|txt))\b", span))
    bases = (*PATH_BASES, path.parent)
    missing = {
        name for name in named if not PI_S_FILES.match(name) and not any((b / name).exists() for b in bases)
    }
    assert missing == set()


# --- the examples of the format ------------------------------------------------------------------


def test_the_migration_example_is_what_the_library_writes(tmp_path: Path) -> None:
    """FORMAT.md §8's version 1 file, opened, is rewritten as the page shows (ids included: they
    are derived, not random)."""
    from pi_session_server.session import SessionManager

    blocks = [content for _info, content in PAGES[ROOT / "docs" / "FORMAT.md"].blocks]
    (before,) = [
        b for b in blocks if b.startswith('{"type":"session","id":"v1sess"') and '"version"' not in b
    ]
    (after,) = [b for b in blocks if b.startswith('{"type":"session","id":"v1sess"') and '"version":3' in b]
    path = tmp_path / "v1.jsonl"
    path.write_text(before + "\n", encoding="utf-8")
    SessionManager.open(str(path)).close()
    assert path.read_text(encoding="utf-8") == after + "\n"


def test_every_option_of_every_command_is_named_on_a_page() -> None:
    """The pages name each option a command takes, in one of its spellings (``-q`` or ``--quiet``;
    its ``--help`` says the rest)."""
    shown = set().union(*(OPTION.findall(PAGES[path].code) for path in USER_PAGES))
    unnamed = set()
    for name in COMMANDS:
        parser = argparse.ArgumentParser(prog=f"pi-session {name}")
        importlib.import_module(f"pi_session_server.commands.{COMMANDS[name][0]}").add_arguments(parser)
        for action in parser._actions:
            spellings = set(action.option_strings) - {"-h", "--help"}
            if spellings and not spellings & shown:
                unnamed.add(f"{name} {' '.join(sorted(spellings))}")
    assert unnamed == set()


# --- the command line page -----------------------------------------------------------------------

CLI_PAGE = ROOT / "docs" / "CLI.md"


def cli_sections() -> dict[str, str]:
    """docs/CLI.md's ``## `name` `` sections by command name, each with its text."""
    text = PAGES[CLI_PAGE].text
    parts = re.split(r"^## `(\w+)`\n", text, flags=re.M)
    return {name: body.split("\n## ")[0] for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_every_command_has_its_section_in_the_command_line_page() -> None:
    assert set(cli_sections()) == set(COMMANDS)


# maps whose keys are the session's data (entry types, roles, "provider/model"), not keys of ours
DATA_MAPS = {"types", "roles", "models"}


def json_keys(value: object, data_map: bool = False) -> set[str]:
    """Every key of a JSON value, at any depth, but those of ``DATA_MAPS``."""
    if isinstance(value, list):
        return set().union(set(), *(json_keys(item) for item in value))
    if not isinstance(value, dict):
        return set()
    own = set() if data_map else set(value)
    return own.union(*(json_keys(item, key in DATA_MAPS and not data_map) for key, item in value.items()))


def test_json_keys_are_found_with_data_maps_left_out() -> None:
    value = {"a": [{"b": 1}], "models": {"p/m": {"turns": 1}}, "types": {"message": 2}}
    assert json_keys(value) == {"a", "b", "models", "types", "turns"}


@pytest.mark.parametrize("command", ["list", "stats", "check"])
def test_every_key_of_a_command_s_json_is_named_in_its_section(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What ``pi-session COMMAND --json`` prints of a copy of the example session (with a last line
    cut short, so that ``check`` has a problem to report) holds no key the page leaves out."""
    from pi_session_server.cli import main
    from pi_session_server.commands._common import example_session_path

    session = tmp_path / "session.jsonl"
    session.write_bytes(Path(example_session_path()).read_bytes() + b'{"type":"message","id":"cut')
    main([command, str(tmp_path if command == "list" else session), "--json"])
    output = json.loads(capsys.readouterr().out)
    named = set(re.findall(r"`(\w+)`", cli_sections()[command]))
    assert json_keys(output) - named == set()


UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def default_size(variable: str) -> int:
    """The default the configuration page's table gives ``variable`` (``1 MiB``), in bytes."""
    page = PAGES[ROOT / "docs" / "CONFIGURATION.md"]
    row = re.search(rf"^\| `{variable}` \|.*\| (\d+) ([KMG]i?B)\b[^|]*\|$", page.text, re.M)
    assert row is not None, f"no size default for {variable}"
    return int(row.group(1)) * UNITS[row.group(2)]


def test_the_index_s_size_defaults_are_the_code_s() -> None:
    """The variables hold bytes: a default written ``1 MB`` where the code counts 1 MiB sends a
    user who sets it to ``1000000`` below the default without knowing."""
    from pi_session_server.session import cache_dir

    assert default_size("PI_SESSION_INDEX_MIN_SIZE") == cache_dir.DEFAULT_MIN_SIZE
    assert default_size("PI_SESSION_INDEX_MAX_BYTES") == cache_dir.DEFAULT_MAX_BYTES


def command_options(name: str) -> list[set[str]]:
    """The spellings of each option ``pi-session NAME`` takes, ``--help`` aside."""
    parser = argparse.ArgumentParser(prog=f"pi-session {name}")
    importlib.import_module(f"pi_session_server.commands.{COMMANDS[name][0]}").add_arguments(parser)
    return [
        set(action.option_strings)
        for action in parser._actions
        if action.option_strings and action.option_strings != ["-h", "--help"]
    ]


def synopsis(command: str) -> str:
    """The ``pi-session COMMAND [...]`` line that opens the command's section of docs/CLI.md."""
    found = re.search(rf"`(pi-session {command}\b[^`]*)`", cli_sections()[command])
    assert found is not None, f"no synopsis in the section of {command}"
    return found.group(1)


def synopses(page: Page) -> Iterator[tuple[str, str]]:
    """(command, synopsis) for each ``pi-session COMMAND ... [--option] ...`` of the page's code: a
    code span or a line of a block whose options are in brackets (a shell comment aside)."""
    pieces = [*page.spans, *(line for _info, content in page.blocks for line in content.split("\n"))]
    for piece in pieces:
        line = " ".join(piece.split(" #")[0].split())
        found = re.match(rf"(?:\$ )?pi-session ({'|'.join(COMMANDS)})\b", line)
        if found and re.search(r"\[-", line):
            yield found.group(1), line


def options_left_out_or_unknown(command: str, line: str) -> list[str]:
    shown = set(OPTION.findall(line))
    taken = command_options(command)
    left_out = [" ".join(sorted(spellings)) for spellings in taken if not spellings & shown]
    return [
        *(f"{option} left out" for option in left_out),
        *(f"{o} unknown" for o in shown - set().union(*taken)),
    ]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_has_a_synopsis_in_its_section(command: str) -> None:
    assert synopsis(command).startswith(f"pi-session {command}")


@pytest.mark.parametrize("path", USER_PAGES, ids=page_id)
def test_every_synopsis_names_every_option_its_command_takes_and_no_other(path: Path) -> None:
    """A user reads a command's options off its synopsis: one added to the command and not to a
    synopsis, or one the command lost, would send them to ``--help`` to find the page wrong."""
    wrong = {
        f"{command}: {problem}"
        for command, line in synopses(PAGES[path])
        for problem in options_left_out_or_unknown(command, line)
    }
    assert wrong == set()


def test_a_synopsis_missing_an_option_is_found() -> None:
    page = Page.read(CLI_PAGE)
    assert {command for command, _line in synopses(page)} == set(COMMANDS)
    assert set(options_left_out_or_unknown("tree", "pi-session tree [FILE] [--ids] [--bogus]")) == {
        *(
            f"{option} left out"
            for option in ("--filter", "--search", "--width", "--ascii", "--pi", "--no-index")
        ),
        "--bogus unknown",
    }
    assert "--output -o left out" in options_left_out_or_unknown(
        "repair", "pi-session repair PATH [--in-place]"
    )


def test_the_defaults_the_pages_give_are_the_commands_s() -> None:
    """The widths a piped command cuts its text to, and the server's defaults, as the pages give
    them, are those of the code (a script's output depends on the widths)."""
    from pi_session_server.commands import demo, listing, serve, tree

    configuration = " ".join(PAGES[ROOT / "docs" / "CONFIGURATION.md"].text.split())
    widths = re.search(r"a fixed width: (\d+) \(`tree`\), (\d+) \(`list`\), (\d+) \(`demo`\)", configuration)
    assert widths is not None
    assert [int(width) for width in widths.groups()] == [
        tree.DEFAULT_WIDTH,
        listing.DEFAULT_WIDTH,
        demo.DEFAULT_WIDTH,
    ]
    sections = {name: " ".join(text.split()) for name, text in cli_sections().items()}
    assert re.findall(r"piped, previews are cut to (\d+) columns", sections["tree"]) == [
        str(tree.DEFAULT_WIDTH)
    ]
    assert re.findall(r"\(neither says\) to (\d+)\.", sections["list"]) == [str(listing.DEFAULT_WIDTH)]
    interval = re.findall(r"`serve --watch-interval SECONDS` \(default ([\d.]+)", configuration)
    assert [float(value) for value in interval] == [serve.DEFAULTS["watch_interval"]]
    level = re.findall(r"`serve --log-file PATH --log-level \w+` \(default: stderr, `(\w+)`", configuration)
    assert level == [serve.DEFAULTS["log_level"]]


def test_the_cache_s_limits_the_pages_give_are_the_code_s() -> None:
    from pi_session_server.commands.check_report import KEPT_MIN_SIZE
    from pi_session_server.session.cache_dir import MAX_KEPT_FILES

    configuration = " ".join(PAGES[ROOT / "docs" / "CONFIGURATION.md"].text.split())
    diagnostics = " ".join(PAGES[ROOT / "docs" / "DIAGNOSTICS.md"].text.split())
    assert re.findall(r"and at most ([\d,]+) files", configuration) == [f"{MAX_KEPT_FILES:,}"]
    kept_from = [
        *re.findall(r"`check` keeps its problems from (\d+) KiB", configuration),
        *re.findall(r"the problems it found \(from (\d+) KiB\)", configuration),
        *re.findall(r"The problems found in a file of (\d+) KiB or more", diagnostics),
    ]
    assert kept_from == [str(KEPT_MIN_SIZE // 1024)] * 3
