#!/usr/bin/python3
"""How long each unit of work of the integration suite took in each pass of a run: the order in
which scripts/test.sh's workers are handed them (tests/integration/conftest.py: the longest
first, so that no long module starts last and runs alone while the other workers wait).

    scripts/unit_seconds.py NORMAL_JUNIT SANITIZER_JUNIT [NOTE]

A unit is what one worker runs whole: a group of conftest.py's SHARED, or a module. Its seconds
are the sum of its tests' times (setup, call and teardown) in each pass's integration-junit.xml
(build/ and build-asan/ after scripts/test.sh); they are written to
tests/integration/unit_seconds.json with NOTE (which run they are from). A unit that file does not
know (a new module) is handed out first."""
import json
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
OUT = os.path.join(ROOT, "tests", "integration", "unit_seconds.json")


def junit_seconds(path, ran_only=True):
    """{module file: seconds} from a pytest junit file: every module's, or (ran_only) those of the
    modules with a test that ran (not skipped)."""
    secs, ran = {}, set()
    for tc in ET.parse(path).iter("testcase"):
        name = tc.get("classname", "").split(".")[-1] + ".py"
        secs[name] = secs.get(name, 0.0) + float(tc.get("time", 0))
        if tc.find("skipped") is None:
            ran.add(name)
    return {m: s for m, s in secs.items() if m in ran or not ran_only}


def unit_seconds(path):
    """{unit: seconds} of one pass: its modules' times, a SHARED group's summed."""
    from conftest import GROUP_OF
    units = {}
    for m, s in junit_seconds(path, ran_only=False).items():
        u = GROUP_OF.get(m, m)
        units[u] = units.get(u, 0.0) + s
    return {u: round(s, 1) for u, s in sorted(units.items())}


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    table = {"measured": argv[3] if len(argv) == 4 else "",
             "normal": unit_seconds(argv[1]), "sanitizers": unit_seconds(argv[2])}
    with open(OUT, "w") as fp:
        json.dump(table, fp, indent=1, sort_keys=True)
        fp.write("\n")
    for p in ("normal", "sanitizers"):
        top = sorted(table[p].items(), key=lambda kv: -kv[1])[:5]
        print(f"{p}: {sum(table[p].values()):.0f} s in {len(table[p])} units; longest: "
              + ", ".join(f"{u} {s:.0f} s" for u, s in top))
    print(f"written: {OUT}")


if __name__ == "__main__":
    main(sys.argv)
