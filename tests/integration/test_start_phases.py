"""joblet logs what each phase of its start took (daemon/main.c: "start: ..."), so that an admin
sees where a large database's start goes (bench/start_bigdb.py, docs/performance.md)."""

import re

from conftest import need_root


def test_start_logs_its_phases(fresh_daemon):
    need_root()
    d = fresh_daemon()
    d.wait(d.submit("/bin/true"))
    d.stop()
    d.start()
    lines = [ln for ln in d.log().splitlines() if " start: " in ln]
    assert len(lines) == 2, d.log()  # one per start
    text = lines[-1].split(" start: ", 1)[1]
    phases = dict((m.group(1), float(m.group(2))) for m in re.finditer(r"([a-z_]+) ([0-9.]+)", text))
    for name in ("setup", "db_open", "jobs", "workflows", "arrays", "init", "workflow_resume", "depend_resume",
                 "adopt", "index", "orphans", "disk_budgets", "listen", "total"):
        assert name in phases, text
    assert sum(v for k, v in phases.items() if k != "total") <= phases["total"] + 1, text
