"""A reviewer's probe of the audit trail's refusal bound (10 a minute a source, core/audit.c),
kept in a table of 256 sources: more sources than that, in turn, pushed each other out before
their bound and came back with a fresh quota, and every refusal was a record again (3,120 of
3,120). Loopback sources only (127.0.x.y: any local user may bind them)."""
import socket
import ssl
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

from test_hostile_tls import Remote, pytestmark  # noqa: F401


def test_refusals_from_more_sources_than_the_table_keep_to_the_bound():
    r = Remote()
    try:
        srcs = [f"127.0.{1 + i // 200}.{2 + i % 200}" for i in range(260)]
        rounds = 12
        req = b"POST /v1/jobs/00000000-0000-0000-0000-000000000000/stop HTTP/1.1\r\nHost: x\r\n\r\n"
        ctx = r.ctx(None)

        def one(s):
            raw = socket.create_connection(("127.0.0.1", r.port), timeout=30, source_address=(s, 0))
            t = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            t.sendall(req)
            try:
                t.recv(4096)
            except (ssl.SSLError, OSError):
                pass
            t.close()

        t0 = time.time()
        with ThreadPoolExecutor(8) as pool:
            for _ in range(rounds):
                list(pool.map(one, srcs))
        took = time.time() - t0
        db = sqlite3.connect(f"file:{r.d.state}/joblet.db?mode=ro", uri=True, timeout=30)
        try:
            one = db.execute("SELECT count(*) FROM audit WHERE action = 'refused' AND peer LIKE ? "
                             "AND detail NOT LIKE '% more refusals from %'", (srcs[7] + ":%",)).fetchone()[0]
            total = db.execute("SELECT count(*) FROM audit WHERE action = 'refused'").fetchone()[0]
        finally:
            db.close()
        print(f"\nin {took:.1f} s: {len(srcs)} sources x {rounds}: {total} refused records; source {srcs[7]}: {one} one by one")
        windows = int(took // 60) + 1   # each source's minute, however many the run spanned
        assert one <= 10 * windows, f"{srcs[7]} was recorded {one} times one by one in {took:.0f} s (bound 10 a minute)"
        # every source in the table and the others together: 10 a minute each, and one count each
        assert total <= (256 + 1) * 11 * windows, total
    finally:
        r.close()
