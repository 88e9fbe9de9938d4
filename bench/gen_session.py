"""Generate realistic pi session files of a given size, for benchmarks.

Shaped like what pi 0.86 writes during long coding sessions: a header, a model change and a thinking
level, then turns of user prompt -> assistant (thinking, text, tool calls) -> tool results (file
reads, bash output, edits), with a compaction (carrying a system checkpoint) every ~600 KB of
content as pi does when the context window fills, an occasional abandoned branch with a branch
summary, labels and a session name. With ``--images`` a share of user messages and tool results
carry base64 screenshots (the kind of data that makes sessions hundreds of MB).

    python bench/gen_session.py OUT.jsonl --size-mb 100 [--images] [--seed 1]

Deterministic for a given seed. Uses the library's serializer, so lines are byte-identical to pi's.
"""

from __future__ import annotations

import argparse
import base64
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pi_session_server.format.jsjson import dumps

PROSE = (  # prose is easier to edit as one string
    "the function returns a list of entries and the test checks that the parser keeps the order of keys "
    "when it rewrites a file so we need to look at the session manager and the migration code again "
    "because the tree view shows the wrong branch after a compaction happened in the middle of a turn"
)
WORDS = PROSE.split()

CODE = (
    "def build_index(entries):\n    index = {}\n    for entry in entries:\n        index[entry['id']] = entry\n"
    "    return index\n\n\nclass SessionManager:\n    def __init__(self, path):\n        self.path = path\n"
)


class Generator:
    def __init__(self, seed: int, images: bool) -> None:
        self.r = random.Random(seed)
        self.images = images
        self.t = 1_764_000_000_000
        self.n = 0
        self.leaf: str | None = None
        self.ids: list[str] = []
        self.used: set[str] = set()
        self.since_compaction = 0
        self.image_cache = [
            base64.b64encode(self.r.randbytes(self.r.randrange(200_000, 900_000))).decode() for _ in range(4)
        ]

    def words(self, n: int) -> str:
        return " ".join(self.r.choice(WORDS) for _ in range(n))

    def iso(self) -> str:
        self.t += self.r.randrange(200, 20_000)
        ms = self.t
        secs, milli = divmod(ms, 1000)
        import time

        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{milli:03d}Z"

    def new_id(self) -> str:
        """An 8-hex-digit id no entry has yet, as pi's generateId draws them (it retries on a
        collision: a 2 GB session of 800,000 entries would otherwise hold ~80 duplicate ids)."""
        self.n += 1
        while True:
            candidate = f"{self.r.getrandbits(32):08x}"
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def entry(self, etype: str, **fields: object) -> dict[str, object]:
        eid = self.new_id()
        value: dict[str, object] = {"type": etype, "id": eid, "parentId": self.leaf, "timestamp": self.iso()}
        value.update(fields)
        self.leaf = eid
        self.ids.append(eid)
        return value

    def usage(self) -> dict[str, object]:
        i, o = self.r.randrange(1000, 150_000), self.r.randrange(50, 4000)
        return {
            "input": i,
            "output": o,
            "cacheRead": i // 2,
            "cacheWrite": 0,
            "totalTokens": i + o,
            "cost": {
                "input": i * 3e-6,
                "output": o * 1.5e-5,
                "cacheRead": 0,
                "cacheWrite": 0,
                "total": i * 3e-6 + o * 1.5e-5,
            },
        }

    def turn(self) -> list[dict[str, object]]:
        out = []
        content: list[dict[str, object]] = [{"type": "text", "text": self.words(self.r.randrange(5, 60))}]
        if self.images and self.r.random() < 0.15:
            content.append(
                {"type": "image", "data": self.r.choice(self.image_cache), "mimeType": "image/png"}
            )
        out.append(self.entry("message", message={"role": "user", "content": content, "timestamp": self.t}))
        for _step in range(self.r.randrange(1, 6)):
            call_id = f"toolu_{self.r.getrandbits(64):016x}"
            tool = self.r.choice(["read", "bash", "edit", "write", "grep"])
            args = (
                {"path": f"src/module_{self.r.randrange(50)}.py"}
                if tool != "bash"
                else {"command": "pytest -q"}
            )
            blocks: list[dict[str, object]] = [
                {
                    "type": "thinking",
                    "thinking": self.words(self.r.randrange(20, 200)),
                    "thinkingSignature": base64.b64encode(self.r.randbytes(300)).decode(),
                },
                {"type": "text", "text": self.words(self.r.randrange(5, 80))},
                {"type": "toolCall", "id": call_id, "name": tool, "arguments": args},
            ]
            out.append(
                self.entry(
                    "message",
                    message={
                        "role": "assistant",
                        "content": blocks,
                        "api": "anthropic-messages",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "usage": self.usage(),
                        "stopReason": "toolUse",
                        "timestamp": self.t,
                    },
                )
            )
            body = (
                CODE * self.r.randrange(5, 80)
                if tool in ("read", "grep")
                else self.words(self.r.randrange(20, 600))
            )
            result: list[dict[str, object]] = [{"type": "text", "text": body}]
            if self.images and self.r.random() < 0.05:
                result.append(
                    {"type": "image", "data": self.r.choice(self.image_cache), "mimeType": "image/png"}
                )
            out.append(
                self.entry(
                    "message",
                    message={
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": tool,
                        "content": result,
                        "details": {"lines": body.count("\n")},
                        "isError": self.r.random() < 0.05,
                        "timestamp": self.t,
                    },
                )
            )
        out.append(
            self.entry(
                "message",
                message={
                    "role": "assistant",
                    "content": [{"type": "text", "text": self.words(self.r.randrange(20, 300))}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": self.usage(),
                    "stopReason": "stop",
                    "timestamp": self.t,
                },
            )
        )
        return out

    def lines(self, size_bytes: int):
        header = {
            "type": "session",
            "version": 3,
            "id": "01a22bbb-5993-736f-8ed9-3b7e7d11bef3",
            "timestamp": self.iso(),
            "cwd": "/home/dev/project",
        }
        written = 0
        for value in (
            header,
            self.entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5"),
            self.entry("thinking_level_change", thinkingLevel="medium"),
            self.entry(
                "message",
                message={"role": "system", "content": "You are pi. " + self.words(300), "timestamp": self.t},
            ),
            self.entry("session_info", name="benchmark session"),
        ):
            line = dumps(value) + "\n"
            written += len(line.encode())
            yield line
        while written < size_bytes:
            batch = self.turn()
            r = self.r.random()
            if r < 0.03 and len(self.ids) > 10:
                # abandon the turn: branch back with a summary
                target = self.ids[-self.r.randrange(2, 10)]
                from_id = self.leaf
                self.leaf = target
                batch.append(self.entry("branch_summary", fromId=from_id, summary=self.words(80)))
            elif r < 0.06:
                batch.append(self.entry("label", targetId=self.r.choice(self.ids), label=self.words(2)))
            for value in batch:
                line = dumps(value) + "\n"
                size = len(line.encode())
                written += size
                self.since_compaction += size
                yield line
            if self.since_compaction > 600_000:
                self.since_compaction = 0
                keep = self.ids[-min(len(self.ids), self.r.randrange(4, 12))]
                value = self.entry(
                    "compaction",
                    summary="## Goal\n" + self.words(400),
                    firstKeptEntryId=keep,
                    tokensBefore=self.r.randrange(150_000, 190_000),
                    details={"readFiles": ["src/a.py"], "modifiedFiles": ["src/b.py"]},
                    usage=self.usage(),
                    systemMessage={
                        "role": "system",
                        "content": "You are pi. " + self.words(300),
                        "timestamp": self.t,
                    },
                )
                line = dumps(value) + "\n"
                written += len(line.encode())
                yield line


def generate(path: str | Path, size_mb: float, *, images: bool = False, seed: int = 1) -> Path:
    path = Path(path)
    gen = Generator(seed, images)
    with open(path, "w", encoding="utf-8") as out:
        for line in gen.lines(int(size_mb * 1024 * 1024)):
            out.write(line)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out")
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--images", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    path = generate(args.out, args.size_mb, images=args.images, seed=args.seed)
    print(f"{path}: {path.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
