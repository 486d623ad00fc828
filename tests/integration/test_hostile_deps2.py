"""A hostile local user against what one dependency request costs the loop (docs/batch.md): a
request's work must not grow with the graph of jobs it names, only with the request.

1. rnx job update --after=X looks for a cycle: whether X waits, directly or through what it
   waits for, for the job updated (core/depend.c waits_for). That walk went through all that X
   waits for, transitively: within the default limits (1,000 jobs not started), 900 jobs each
   after the 64 before them made every update naming the last one walk 57,000 links, and an
   update whose `after` does not change (answered at once, written nowhere) still walked them
   all: 300 such updates took 2.38 s of the loop's CPU, 300 naming a job after one 0.03 s (8 ms a
   request, 80 times its baseline). The walk now goes through jobs that still wait on their
   `after` only, and at most 1,000 links for one update (depend.c DEPEND_WALK_MAX); past them it
   is refused, 400 naming `after` and the bound: the same 300 updates 0.03 s.

The attacker is a uid with no account (setpriv; joblet reads the peer's credentials)."""
from conftest import bulk_as
from test_hostile_deps import MALLORY, cpu_s


def test_update_after_walks_a_bounded_part_of_what_it_names(fresh_daemon):
    """A gate that sleeps; 900 jobs named n0..n899, each after the 64 before it (n0 after the
    gate); one job s0 after the gate alone; and a job u after the gate. The same number of
    updates of u naming s0 (the baseline: a graph of one job) and naming n899 (the wide one)
    each over one connection, the loop's CPU measured for each. Before, the updates naming
    n899 each walked all 900 jobs' 57,000 links (seen: 2.38 s of CPU against 0.03 s); now they are
    refused after 1,000 (0.03 s)."""
    d = fresh_daemon()
    n, width, nreq = 900, 64, 300
    (code, gate), = bulk_as(d, MALLORY, [["POST", "/v1/jobs", {"command": "sleep", "args": ["600"]}]])
    assert code == 201, gate
    d.wait_status(gate["id"], "RUNNING")
    reqs = []
    for i in range(n):
        after = [{"job": f"n{k}", "state": "any"} for k in range(max(0, i - width), i)] or \
            [{"job": gate["id"], "state": "any"}]
        reqs.append(["POST", "/v1/jobs", {"command": "true", "name": f"n{i}", "after": after}])
    for name in ("s0", "u"):
        reqs.append(["POST", "/v1/jobs", {"command": "true", "name": name,
                                          "after": [{"job": gate["id"], "state": "any"}]}])
    r = bulk_as(d, MALLORY, reqs)
    assert all(code == 201 for code, _ in r), [x for x in r if x[0] != 201][:1]
    u = r[-1][1]["id"]
    assert d.job(u)["status"] == "PENDING"

    def updates(target):
        cpu0 = cpu_s(d.proc.pid)
        out = bulk_as(d, MALLORY, [["POST", f"/v1/jobs/{u}/update",
                                 {"after": [{"job": target, "state": "any"}]}]] * nreq)
        return cpu_s(d.proc.pid) - cpu0, out

    small, out = updates("s0")
    assert all(code == 200 for code, _ in out), out[0]
    wide, out = updates(f"n{n - 1}")
    codes = {code for code, _ in out}
    print(f"{nreq} updates of u --after: {small:.3f} s of the loop's CPU naming a job after one, "
          f"{wide:.3f} s naming the last of {n} jobs each after {width} ({codes})")
    assert wide < 3 * small + 0.1, (
        f"{nreq} updates naming n{n - 1} cost the loop {wide:.3f} s ({small:.3f} s naming s0)")
    # what is answered: a refusal on field after that names its bound, or a change made
    code, ans = out[-1]
    if code == 400:
        msg = ans["error"]["message"]
        assert ans["error"].get("field") == "after" and "1000" in msg, ans
    else:
        assert code == 200, ans
    assert d.job(u)["status"] == "PENDING"
