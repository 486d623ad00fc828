"""GET /v1/jobs of every job walks the table in seq order a slice at a time (api/jobs_list.c:
jobs_from_seq, arrays_from_seq); between slices the table changes. A listing read slowly, while
jobs after its place are deleted and new ones made: every job kept is listed once, in order, none
deleted before its slice was made, none made after the request."""
import json
import re
import socket

from conftest import bulk_as

KEPT = 2000           # held jobs (whole jobs of ~1.4 KB: a client that stops reading holds the
                      # listing well before the last ones: sockets' buffers, one slice of 256)
TAIL = 300            # the last ones, deleted while the listing waits
MIDDLE = range(1200, 1220)


def dechunk(raw):
    """The body of a chunked HTTP/1.1 answer."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    if b"chunked" not in head.lower():
        return rest
    body = b""
    while True:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size.split(b";")[0], 16)
        if n == 0:
            return body
        body += rest[:n]
        rest = rest[n + 2:]


def test_a_slow_listing_while_jobs_go_and_come(fresh_daemon):
    d = fresh_daemon("limits:\n  max_queued_per_user: 0\n")
    out = bulk_as(d, 0, [["POST", "/v1/jobs", {"command": "true", "hold": True}]] * KEPT)
    assert all(code == 201 for code, _ in out), out[:3]
    ids = [o["id"] for _, o in out]

    seen = len(d.log())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(d.sock)
    s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: joblet\r\nConnection: close\r\n\r\n")
    raw = s.recv(4096)
    assert raw.startswith(b"HTTP/1.1 200"), raw[:200]

    # while it waits: the last TAIL and some in the middle deleted, new ones made
    gone = ids[KEPT - TAIL:] + [ids[i] for i in MIDDLE]
    acts = [["POST", f"/v1/jobs/{i}/cancel", None] for i in gone] + [["DELETE", f"/v1/jobs/{i}", None] for i in gone]
    done = bulk_as(d, 0, acts)
    assert all(code in (200, 204) for code, _ in done), [x for x in done if x[0] not in (200, 204)][:3]
    new = bulk_as(d, 0, [["POST", "/v1/jobs", {"command": "true", "hold": True}]] * 50)
    assert all(code == 201 for code, _ in new), new[:3]

    s.settimeout(120)
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        raw += b
    s.close()
    listed = [j["id"] for j in json.loads(dechunk(raw))["jobs"]]
    assert len(listed) == len(set(listed)), "a job listed twice"
    kept = [i for i in ids if i not in set(gone)]
    assert listed == kept, (len(listed), len(kept), set(listed) ^ set(kept))
    # (the deletes came while the walk was under way: it did not look at them)
    walk = re.findall(r"a listing looked at (\d+) jobs and \d+ arrays, picked (\d+), in (\d+) slices", d.log()[seen:])
    assert walk and walk[-1][:2] == (str(len(kept)), str(len(kept))) and int(walk[-1][2]) > 1, walk
