"""Session-layer parts of pi's ``packages/coding-agent/test/rpc-tree-projection.test.ts``.

Source: badlogic/pi-mono @ 09778b23. The RPC projection itself (``projectTree``,
``buildToolCallMap``, previews) is pi's RPC mode, not the session layer; what is ported is what those
cases rely on from ``SessionManager.getTree()``/``getLeafId()``: the raw tree they project.
"""

from __future__ import annotations

from builders import assistant_message as assistant_msg
from builders import user_message as user_msg

from pi_session_server.session import SessionManager, tree_to_json
from pi_session_server.session.tree import preorder


def test_rpc_tree_projection__raw_tree_carries_resolved_labels_and_label_entries_as_nodes():
    # upstream: "filters metadata entries and preserves resolved labels" (filtering is the projection's job)
    manager = SessionManager.in_memory()
    user_id = manager.append_message(user_msg("First"))
    manager.append_message(assistant_msg("Second"))
    label_id = manager.append_label_change(user_id, "checkpoint")

    tree = manager.get_tree()
    assert len(tree) == 1
    assert tree[0].label == "checkpoint"
    types = [node.entry["type"] for _, node in preorder(tree)]
    assert types == ["message", "message", "label"]  # in 0.86.1 label entries are ordinary nodes
    assert next(node for _, node in preorder(tree) if node.entry["id"] == label_id).children == []


def test_rpc_tree_projection__raw_leaf_points_to_the_label_entry_after_labelling():
    # upstream: "resolves projected leaf id when raw leaf points to filtered metadata entry"
    manager = SessionManager.in_memory()
    user_id = manager.append_message(user_msg("root"))
    label_id = manager.append_label_change(user_id, "checkpoint")
    assert manager.get_leaf_id() == label_id
    assert manager.get_leaf_entry()["parentId"] == user_id


def test_rpc_tree_projection__handles_deep_trees_without_recursive_stack_overflow():
    manager = SessionManager.in_memory()
    manager.append_message(user_msg("root"))
    for i in range(12000):
        manager.append_message(user_msg(f"node {i}"))

    tree = manager.get_tree()
    depths = [depth for depth, _ in preorder(tree)]
    assert len(depths) == 12001
    assert max(depths) == 12000
    as_json = tree_to_json(tree)  # nested 12001 levels deep, built without recursion
    node, depth = as_json[0], 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == 12000
    assert node["entry"]["message"]["content"] == "node 11999"
