"""``pi-session repair --in-place`` while another program rewrites the file in place
(``cat backup > FILE``: a truncation and a write, as an editor saving in place does), cued the
moment the repair holds the file's lock. Whatever the repair was doing then, the file ends as the
other program wrote it, and a repair that saw the change says so with exit status 2.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest
from test_rewrite_races import chain_session, repair_seen_holding_the_lock

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_rewrite_in_place_during_a_repair_in_place_is_what_the_file_ends_as(tmp_path: Path) -> None:
    path = str(chain_session(tmp_path / "s.jsonl", 4000, pad=1000))
    backup = chain_session(tmp_path / "backup.jsonl", 3000, pad=1200)
    glued = itertools.count()
    codes = []
    for _ in range(6):
        repair = repair_seen_holding_the_lock(path, glued)
        subprocess.run(["sh", "-c", 'cat "$1" > "$0"', path, str(backup)], check=True)
        out, err = repair.communicate(timeout=120)
        assert Path(path).read_bytes() == backup.read_bytes(), (
            f"the other program's rewrite was lost: {out}{err}"
        )
        assert repair.returncode in (0, 2), out + err
        codes.append(repair.returncode)
    assert 2 in codes, "no repair saw the rewrite: the test did not race them"
