// What pi's own /tree selector shows for session files, per filter mode (the reference for
// pi_session_server/server/tree_view.py). Usage:
//   node tui_tree_probe.mjs ORACLE_DIR FILE... > result.json
// ORACLE_DIR holds node_modules/@earendil-works/pi-coding-agent (0.86.1). Prints
// {"<file>": {"<mode>": [entry ids in display order], ...}, ...}. Search is probed with "cache".
import path from "node:path";
import { pathToFileURL } from "node:url";

const [oracleDir, ...files] = process.argv.slice(2);
const dist = path.resolve(oracleDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const load = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const { SessionManager } = await load("core/session-manager.js");
const { TreeSelectorComponent } = await load("modes/interactive/components/tree-selector.js");
const theme = await load("modes/interactive/theme/theme.js");
if (theme.initTheme) theme.initTheme("dark");

const modes = ["default", "no-tools", "user-only", "labeled-only", "all"];
const out = {};
for (const file of files) {
  const sm = SessionManager.open(file);
  const component = new TreeSelectorComponent(sm.getTree(), sm.getLeafId(), 40, () => {}, () => {});
  const list = component.getTreeList();
  const result = {};
  for (const mode of modes) {
    list.filterMode = mode;
    list.searchQuery = "";
    list.applyFilter();
    result[mode] = list.filteredNodes.map((n) => n.node.entry.id ?? null);
  }
  list.filterMode = "default";
  list.searchQuery = "cache";
  list.applyFilter();
  result["default+search"] = list.filteredNodes.map((n) => n.node.entry.id ?? null);
  out[file] = result;
}
process.stdout.write(JSON.stringify(out));
