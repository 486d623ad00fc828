"""The web console in Debian's chromium, headless, driven through chromium-driver by
python3-selenium (no browser download): opened through `rnx console` on a simulated DGX H100,
it follows jobs, a log and a GPU drain live, without reloading; a non-admin sees no admin
actions and none of another user's jobs. Screenshots of every page go to $CONSOLE_SCREENSHOTS,
else to the test's temporary directory."""
import os
import shutil
import time

import pytest

from conftest import ROOT, tasks_of, wait_for
from console_util import Console

try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:   # pragma: no cover
    webdriver = None

FIX = os.path.join(ROOT, "tests", "fixtures")
UID = 4325
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(webdriver is None or not CHROMIUM or not DRIVER,
                                reason="needs chromium, chromium-driver and python3-selenium (scripts/install-deps.sh)")


def browser(net, tmp, width=1280, height=800):
    """chromium in net (the own_net fixture: console_util.OwnNetwork), where the test's rnx console runs too; its
    wrapper written into tmp"""
    return net.browser(tmp, CHROMIUM, DRIVER, f"--window-size={width},{height}", "--disable-extensions")


@pytest.fixture
def shots(tmp_path):
    d = os.environ.get("CONSOLE_SCREENSHOTS") or str(tmp_path / "screenshots")
    os.makedirs(d, exist_ok=True)
    return d


def wait(drv, cond, secs=45):
    # pages are redrawn as events come: an element found may be replaced before it is read
    return WebDriverWait(drv, secs, poll_frequency=0.1,
                         ignored_exceptions=[StaleElementReferenceException]).until(cond)


def css(drv, sel):
    return drv.find_elements(By.CSS_SELECTOR, sel)


def go(drv, page):
    drv.execute_script("location.hash = arguments[0]", page)


def test_console_in_chromium(fresh_daemon, shots, own_net, tmp_path):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(con.url)
        # the token became a cookie and the page loaded everything
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        assert drv.current_url.endswith(":%d/" % con.port)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        assert not drv.find_element(By.ID, "nav-admin").get_attribute("hidden")   # root is an admin

        # a job appears on its GPU's card and in the table, and changes state, without reloading
        marker = drv.execute_script("return window.__marker = Math.random()")
        jid = d.rnx("job", "run", "--gpu=1", "--name=train", "sh", "-c",
                    "echo hello-from-the-job; sleep 1; echo second-line; exec sleep 600", check=True).stdout.split()[-1]
        state = wait(drv, lambda x: x.execute_script(
            "return [...document.querySelectorAll('article.gpu')].filter(c => c.textContent.includes(arguments[0]))"
            ".map(c => c.dataset.state)[0]", jid[:8]))
        assert state == "allocated"
        drv.save_screenshot(os.path.join(shots, "gpus.png"))
        go(drv, "#/jobs")
        wait(drv, lambda x: css(x, f'#jobs-table tr[data-id="{jid}"][data-status="RUNNING"]'))
        waiting = d.rnx("job", "run", "--gpu=8", "sleep", "600", check=True).stdout.split()[-1]
        wait(drv, lambda x: css(x, f'#jobs-table tr[data-id="{waiting}"][data-status="QUEUED"]'))
        drv.save_screenshot(os.path.join(shots, "jobs.png"))

        go(drv, "#/queue")
        wait(drv, lambda x: "GPU" in x.find_element(By.CSS_SELECTOR, f'#queue-table tr[data-id="{waiting}"]').text)
        drv.save_screenshot(os.path.join(shots, "queue.png"))

        # the job's page follows its log
        go(drv, f"#/jobs/{jid}")
        wait(drv, lambda x: "second-line" in x.find_element(By.ID, "job-log").text)
        assert "hello-from-the-job" in drv.find_element(By.ID, "job-log").text
        drv.save_screenshot(os.path.join(shots, "job.png"))
        drv.find_element(By.ID, "job-stop").click()
        wait(drv, EC.alert_is_present()).accept()
        wait(drv, lambda x: x.find_element(By.ID, "job-status").text == "STOPPED", 20)
        # the queued job took the GPUs
        go(drv, "#/jobs")
        wait(drv, lambda x: css(x, f'#jobs-table tr[data-id="{waiting}"][data-status="RUNNING"]'))
        d.rnx("job", "stop", waiting, check=True)

        # a workflow's graph, live
        d.rnx("workflow", "run", os.path.join(ROOT, "examples", "diamond.yaml"), check=True)
        go(drv, "#/workflows")
        wait(drv, lambda x: len(css(x, "svg.dag g[data-job]")) == 4)
        wait(drv, lambda x: css(x, 'svg.dag g[data-job="fetch"][data-status="COMPLETED"]'), 30)
        drv.save_screenshot(os.path.join(shots, "workflows.png"))

        # admin: drain a GPU with the confirmation; its card changes
        go(drv, "#/admin")
        click(drv, '#admin-gpus tr[data-index="3"] button[data-action="drain"]')
        wait(drv, EC.alert_is_present()).accept()
        wait(drv, lambda x: css(x, '#admin-gpus tr[data-index="3"] .badge[data-state="draining"]'))
        wait(drv, lambda x: css(x, '#audit tbody tr'))
        drv.save_screenshot(os.path.join(shots, "admin.png"))
        go(drv, "#/gpus")
        wait(drv, lambda x: css(x, 'article.gpu[data-index="3"][data-state="draining"]'))

        # the stopped job deleted: its GPU time and count stay in History's sums, said so
        assert d.rnx("job", "delete", jid).returncode == 0
        go(drv, "#/history")
        wait(drv, lambda x: css(x, "#hist-users") and "(1 deleted)" in x.find_element(By.ID, "hist-users").text)
        drv.save_screenshot(os.path.join(shots, "history.png"))
        # never reloaded
        assert drv.execute_script("return window.__marker") == marker
        drv.set_window_size(390, 844)
        go(drv, "#/gpus")
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        time.sleep(0.2)
        drv.save_screenshot(os.path.join(shots, "gpus-phone.png"))
        drv.set_window_size(1280, 800)
        drv.execute_cdp_cmd("Emulation.setEmulatedMedia",
                            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        go(drv, "#/workflows")
        wait(drv, lambda x: len(css(x, "svg.dag g[data-job]")) == 4)
        bg = drv.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(20, 23, 28)", bg     # the dark scheme's background
        drv.save_screenshot(os.path.join(shots, "workflows-dark.png"))
    finally:
        drv.quit()
        con.stop()

    # a user who is not an admin: no admin page or actions, none of root's jobs
    root_job = d.rnx("job", "run", "--name=roots-secret", "sleep", "600", check=True).stdout.split()[-1]
    user = Console(d, uid=UID, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(user.url)
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        assert drv.find_element(By.ID, "nav-admin").get_attribute("hidden") is not None
        go(drv, "#/jobs")
        wait(drv, lambda x: css(x, "#jobs-table"))
        assert root_job[:8] not in drv.find_element(By.TAG_NAME, "main").text
        go(drv, "#/admin")
        wait(drv, lambda x: "for admins" in x.find_element(By.TAG_NAME, "main").text)
        assert not css(drv, "button[data-action]")
        drv.save_screenshot(os.path.join(shots, "non-admin.png"))
    finally:
        drv.quit()
        user.stop()
        d.rnx("job", "stop", root_job)


def test_gpu_samples_draw_live(fresh_daemon, shots, tmp_path, own_net):
    """On the fake NVML (samples every 200 ms): sparklines fill in, a GPU's utilization and
    temperature follow what the driver says, an XID shows on its card — all without reloading."""
    from conftest import fake_nvml_daemon
    d, _, events = fake_nvml_daemon(fresh_daemon, tmp_path)
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(con.url)
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        wait(drv, lambda x: len(css(x, 'article.gpu[data-index="0"] svg.spark polyline')) == 3)
        # samples are drawn once a frame, not once each: 40 whole redraws a second (8 GPUs every
        # 200 ms) left a slow browser behind for good (a CI run: 30 min, its renderer 4.5 GB)
        drawn_at_once = drv.execute_script("""
            window.renders = 0;
            const draw = render;
            window.render = function (navigated) { window.renders++; return draw(navigated); };
            for (let i = 0; i < 200; i++)
              onSample({index: 0, utilization_pct: i % 100, temperature_c: 50, memory_used_mb: 1, power_w: 100});
            return window.renders;""")
        assert drawn_at_once == 0, f"200 samples were {drawn_at_once} redraws"
        wait(drv, lambda x: x.execute_script("return window.renders") >= 1)
        with open(events, "a") as f:
            f.write("util 0 83\ntemp 0 71\npower 0 455\nxid 0 13\n")
        card = 'article.gpu[data-index="0"]'
        wait(drv, lambda x: all(t in x.find_element(By.CSS_SELECTOR, card).text for t in ("83 %", "71 °C", "455 W")))
        wait(drv, lambda x: "XID 13" in x.find_element(By.CSS_SELECTOR, card).text)
        drv.save_screenshot(os.path.join(shots, "gpus-live.png"))
    finally:
        drv.quit()
        con.stop()


def test_a_failed_first_load_is_tried_again_until_it_comes(fresh_daemon, shots, own_net, tmp_path):
    """The page loads everything when its event stream says hello. One of those requests fails
    (chromium blocks it, as a proxy or a restarting joblet would): the page says so and tries
    again by itself, and draws once the request goes through; it never waits for the next resync."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.execute_cdp_cmd("Network.enable", {})
        drv.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/workflows"]})
        drv.get(con.url)
        wait(drv, lambda x: "trying again in" in x.find_element(By.ID, "live").text)
        live = drv.find_element(By.ID, "live").text
        assert live.startswith("error: ") and not css(drv, "#gpu-cards article.gpu"), live
        drv.save_screenshot(os.path.join(shots, "load-failed.png"))
        drv.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8, secs=40)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
    finally:
        drv.quit()
        con.stop()


BUSY_TWICE = """
window.__busy = 0; window.__errors = []; window.__sawBusy = false;
const realFetch = window.fetch.bind(window);
window.fetch = (url, opts) => {
  if (String(url).endsWith("/v1/jobs") && window.__busy < 2) {
    window.__busy++;
    return Promise.resolve(new Response('{"error":{"code":"unavailable","message":"joblet is busy (made by the test)"}}',
      {status: 503, headers: {"Retry-After": "1", "Content-Type": "application/json"}}));
  }
  return realFetch(url, opts);
};
new MutationObserver(() => {
  const l = document.getElementById("live");
  if (!l) return;
  if (l.textContent.startsWith("error")) window.__errors.push(l.textContent);
  if (l.dataset.live === "busy") window.__sawBusy = true;
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_a_busy_answer_is_asked_again_not_shown_as_an_error(fresh_daemon, shots, own_net, tmp_path):
    """joblet answers 503 with Retry-After when nothing was done and a moment later it may be (its
    database held by a backup, an account being looked up): the page asks again after the pause,
    as rnx does, its live mark saying "busy" meanwhile, and shows no error (before: the load
    failed, "error: ..."). The two busy answers are made in the page, before its request leaves:
    no read of joblet's can be made busy at will."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": BUSY_TWICE})
        drv.get(con.url)
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        got = drv.execute_script("return [window.__busy, window.__sawBusy, window.__errors]")
        assert got == [2, True, []], got
    finally:
        drv.quit()
        con.stop()


def click(drv, sel):
    """Clicks what sel finds, again if the page redrew it meanwhile (rows follow the events)."""
    wait(drv, lambda x: x.find_element(By.CSS_SELECTOR, sel).click() or True)


def actions(drv, i):
    return [b.get_attribute("data-action") for b in css(drv, f'#admin-gpus tr[data-index="{i}"] button[data-action]')]


def test_admin_offline_is_refused_while_a_job_runs_then_forced(fresh_daemon, shots, own_net, tmp_path):
    """The Admin page on a simulated GPU that runs a job: offline's confirmation says what offline
    does; joblet refuses (the job runs on); the console offers the force step with its own
    confirmation, which sends {"force": true} as rnx gpu offline --force does: the job is stopped
    and the GPU goes offline. The buttons follow the GPU's state throughout."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    jid = d.rnx("job", "run", "--gpu=1", "--name=victim", "sleep", "600", check=True).stdout.split()[-1]
    g = d.wait_status(jid, "RUNNING")["gpus"][0]["index"]
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(con.url)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        go(drv, "#/admin")
        row = f'#admin-gpus tr[data-index="{g}"]'
        wait(drv, lambda x: css(x, f'{row}[data-state="allocated"]'))
        assert actions(drv, g) == ["drain", "offline"]      # no "online" for a GPU in service
        assert jid[:8] in drv.find_element(By.CSS_SELECTOR, row).text
        click(drv, f'{row} button[data-action="offline"]')
        ask = wait(drv, EC.alert_is_present())
        text = ask.text
        assert "offline" in text and "keep running" not in text and jid[:8] in text, text
        assert "refuses" in text and "force" in text, text
        ask.accept()
        msg = wait(drv, lambda x: "refused" in x.find_element(By.ID, "admin-msg").text and x.find_element(By.ID, "admin-msg"))
        assert "runs 1 job" in msg.text and jid[:8] in msg.text, msg.text
        # refused: nothing changed
        st, gpu = d.api("GET", f"/v1/gpus/{g}")
        assert gpu["state"] == "allocated" and d.job(jid)["status"] == "RUNNING"
        drv.save_screenshot(os.path.join(shots, "admin-refused.png"))
        force = drv.find_element(By.ID, "admin-force")
        assert "Force offline" in force.text
        # the force step's own confirmation; dismissed, nothing happens
        force.click()
        ask = wait(drv, EC.alert_is_present())
        text = ask.text
        assert "stopped now" in text and "FAILED" in text and "queue" in text and jid[:8] in text, text
        ask.dismiss()
        assert d.job(jid)["status"] == "RUNNING"
        force.click()
        wait(drv, EC.alert_is_present()).accept()
        wait(drv, lambda x: css(x, f'{row}[data-state="offline"]'))
        job = d.wait(jid)
        assert job["status"] == "FAILED" and job["end_reason"] == "gpu_error", job
        assert "its jobs were stopped" in drv.find_element(By.ID, "admin-msg").text
        wait(drv, lambda x: actions(x, g) == ["online"])    # offline: only online applies
        st, recs = d.api("GET", f"/v1/audit?gpu={g}&limit=5")
        assert any(r["action"] == "offline" and "offline --force" in r["detail"] for r in recs["records"]), recs
        drv.save_screenshot(os.path.join(shots, "admin-forced.png"))
        # online again, then a drained GPU offers no drain
        click(drv, f'{row} button[data-action="online"]')
        assert "back into service" in wait(drv, EC.alert_is_present()).text
        drv.switch_to.alert.accept()
        wait(drv, lambda x: css(x, f'{row}[data-state="available"]'))
        wait(drv, lambda x: actions(x, g) == ["drain", "offline"])
        click(drv, f'{row} button[data-action="drain"]')
        wait(drv, EC.alert_is_present()).accept()
        wait(drv, lambda x: css(x, f'{row}[data-state="draining"]'))
        wait(drv, lambda x: actions(x, g) == ["offline", "online"])
    finally:
        drv.quit()
        con.stop()


def test_jobs_columns_history_axes_and_audit_pages(fresh_daemon, shots, own_net, tmp_path):
    """Jobs: exit code, duration (ticking while it runs), GPUs wanted by a queued job, commands
    quoted as rnx quotes them; History: each chart has distinct time labels and a value axis with
    its unit; Admin: the audit trail 50 records a page, Older and Newer."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    run = d.rnx("job", "run", "--gpu=1", "sh", "-c", "echo 'a b'; exec sleep 600", check=True).stdout.split()[-1]
    queued = d.rnx("job", "run", "--gpu=8", "sleep", "600", check=True).stdout.split()[-1]
    ended = d.rnx("job", "run", "sh", "-c", "exit 3", check=True).stdout.split()[-1]
    d.wait(ended)
    for k in range(35):                       # audit records: 2 per drain or online, 140 in all
        for act in ("drain", "online"):
            assert d.api("POST", f"/v1/gpus/{5 + k % 3}/{act}", {})[0] == 200
    listing = d.rnx("job", "list", check=True).stdout
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(con.url)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        go(drv, "#/jobs")
        cell = lambda jid, col: drv.find_element(By.CSS_SELECTOR, f'#jobs-table tr[data-id="{jid}"] td[data-col="{col}"]').text
        wait(drv, lambda x: css(x, f'#jobs-table tr[data-id="{queued}"]'))
        assert cell(run, "command") == "sh -c 'echo '\\''a b'\\''; exec sleep 600'"
        assert cell(run, "command") in listing          # as rnx job list shows it
        assert cell(queued, "gpus") == "8 wanted" and "8 wanted" in listing
        assert cell(ended, "exit") == "3" and cell(run, "exit") == "–" and cell(queued, "exit") == "–"
        assert cell(queued, "duration") == "–"
        first = cell(run, "duration")
        assert first.endswith("s") and first[0].isdigit(), first
        wait(drv, lambda x: cell(run, "duration") != first)          # it ticks without an event
        drv.save_screenshot(os.path.join(shots, "jobs.png"))

        go(drv, "#/history")
        wait(drv, lambda x: len(css(x, "svg.chart")) == 3)
        for ch in css(drv, "svg.chart"):
            name = ch.get_attribute("data-chart")
            xs = [t.text for t in ch.find_elements(By.CSS_SELECTOR, "g.axis.x > text")]
            ys = [t.text for t in ch.find_elements(By.CSS_SELECTOR, "g.axis.y > text:not(.title)")]
            title = ch.find_element(By.CSS_SELECTOR, "g.axis.y > text.title").text
            assert len(xs) >= 4 and len(set(xs)) == len(xs) and all(xs), (name, xs)
            assert len(ys) >= 2 and len(set(ys)) == len(ys) and float(ys[0]) == 0, (name, ys)
            assert [float(v.replace(",", "")) for v in ys] == sorted(float(v.replace(",", "")) for v in ys)
            assert {"jobs": "jobs / hour", "wait": "(s)", "util": "(%)"}[name] in title, (name, title)
        jobs_chart = drv.find_element(By.CSS_SELECTOR, 'svg.chart[data-chart="jobs"]')
        assert jobs_chart.find_elements(By.CSS_SELECTOR, "rect.barc")      # jobs started this hour
        util = drv.find_element(By.CSS_SELECTOR, 'svg.chart[data-chart="util"]')
        assert [t.text for t in util.find_elements(By.CSS_SELECTOR, "g.axis.y > text:not(.title)")][-1] == "100"
        drv.save_screenshot(os.path.join(shots, "history.png"))
        Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select
        Select(drv.find_element(By.ID, "history-hours")).select_by_value("168")
        wait(drv, lambda x: len(set(t.text for t in x.find_elements(By.CSS_SELECTOR, 'svg.chart[data-chart="jobs"] g.axis.x > text'))) >= 7)

        go(drv, "#/admin")
        rows = lambda x: [r.get_attribute("data-id") for r in css(x, "#audit tbody tr[data-id]")]
        wait(drv, lambda x: len(rows(x)) == 50)
        page1 = rows(drv)
        st, full = d.api("GET", "/v1/audit")
        ids = [str(r["id"]) for r in full["records"]]
        assert page1 == ids[:50] and 100 < len(ids) < 150, len(ids)
        assert drv.find_element(By.ID, "audit-newer").get_attribute("disabled") is not None
        drv.find_element(By.ID, "audit-older").click()
        wait(drv, lambda x: rows(x) == ids[50:100])
        drv.find_element(By.ID, "audit-older").click()
        wait(drv, lambda x: rows(x) == ids[100:])
        assert drv.find_element(By.ID, "audit-older").get_attribute("disabled") is not None   # the oldest page
        drv.find_element(By.ID, "audit-newer").click()
        wait(drv, lambda x: rows(x) == ids[50:100])
        drv.find_element(By.ID, "audit-newest").click()
        wait(drv, lambda x: rows(x) == ids[:50])
        height = drv.execute_script("return document.getElementById('audit').getBoundingClientRect().height")
        assert height < 50 * 60, height
        drv.save_screenshot(os.path.join(shots, "admin.png"))
    finally:
        drv.quit()
        con.stop()
        for j in (run, queued):
            d.rnx("job", "stop", j)


def test_jobs_show_their_slurm_numbers(fresh_daemon, shots, own_net, tmp_path):
    """Every job and array has a number (docs/api.md, "Numbers"): the Jobs table shows it beside
    the id, an expanded array shows each task's (none for a task not made yet), and a job's page
    shows it as SLURM_JOB_ID, a task's also its array's as SLURM_ARRAY_JOB_ID: the numbers the
    jobs themselves see and rnx job status prints. A job's page shows its history too (the events
    rnx job status --detail prints), kept live as the job is stopped from elsewhere."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    d.wait(d.rnx("job", "run", "true", check=True).stdout.split()[-1])      # numbers from 2 on
    jid = d.rnx("job", "run", "--slurm-env", "--name=numbered", "sh", "-c",
                'echo "job=$SLURM_JOB_ID"; exec sleep 600', check=True).stdout.split()[-1]
    aid = d.rnx("job", "run", "--slurm-env", "--array=0-3%1", "sh", "-c",
                'echo "job=$SLURM_JOB_ID array=$SLURM_ARRAY_JOB_ID"; exec sleep 600', check=True).stdout.split()[-1]
    aid = d.api("GET", f"/v1/jobs/{aid}")[1]["id"]
    job, arr = d.wait_status(jid, "RUNNING"), d.job(aid)
    wait_for(lambda: [t for t in tasks_of(d, aid) if t["status"] == "RUNNING"], "task 0 running")
    task = tasks_of(d, aid)[0]
    assert len({job["number"], arr["number"], task["number"]}) == 3 and task["array"]["number"] == arr["number"]
    # the numbers are those the jobs see and rnx prints
    wait_for(lambda: f"job={job['number']}" in d.rnx("job", "log", "--no-follow", jid).stdout, "the job's SLURM_JOB_ID")
    wait_for(lambda: f"job={task['number']} array={arr['number']}" in d.rnx("job", "log", "--no-follow", task["id"]).stdout,
             "the task's SLURM_JOB_ID and SLURM_ARRAY_JOB_ID")
    assert f"Number: {job['number']} (SLURM_JOB_ID)" in d.rnx("job", "status", jid, check=True).stdout
    con = Console(d, prefix=own_net.inside)
    drv = browser(own_net, tmp_path)
    try:
        drv.get(con.url)
        wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        go(drv, "#/jobs")
        num = lambda sel: drv.find_element(By.CSS_SELECTOR, f'#jobs-table tr{sel} td[data-col="number"]').text
        wait(drv, lambda x: css(x, f'#jobs-table tr[data-id="{aid}"]'))
        head = [th.text for th in css(drv, "#jobs-table thead th")]
        assert head[:2] == ["ID", "NUM"], head
        assert "SLURM_JOB_ID" in drv.find_element(By.CSS_SELECTOR, "#jobs-table thead abbr").get_attribute("title")
        assert num(f'[data-id="{jid}"]') == str(job["number"])
        assert num(f'[data-id="{aid}"]') == str(arr["number"])
        assert not css(drv, f'#jobs-table tr[data-id="{task["id"]}"]')       # under its array only
        # expanded: the made task with its own number, the others without one yet
        button = drv.find_element(By.ID, f"expand-{aid}")
        assert button.get_attribute("aria-expanded") == "false" and "tasks of array" in button.get_attribute("aria-label")
        button.click()
        wait(drv, lambda x: len(css(x, "#jobs-table tr.task[data-task]")) == 4)
        assert drv.find_element(By.ID, f"expand-{aid}").get_attribute("aria-expanded") == "true"
        assert num(f'.task[data-id="{task["id"]}"]') == str(task["number"])
        assert [num(f'.task[data-task="{k}"]') for k in (1, 2, 3)] == ["–"] * 3
        drv.save_screenshot(os.path.join(shots, "jobs-array.png"))

        # the job's page: its number as SLURM_JOB_ID
        go(drv, f"#/jobs/{jid}")
        wait(drv, lambda x: x.find_element(By.ID, "job-number").text == str(job["number"]))
        assert "SLURM_JOB_ID" in drv.find_element(By.ID, "job-number").find_element(By.XPATH, "..").text
        # its history, as rnx job status --detail prints it (?detail=1), and live: stopped from
        # elsewhere, the page shows the stop and the end without a reload
        hist = lambda x: [(r.get_attribute("data-event"), r.find_elements(By.TAG_NAME, "td")[2].text)
                          for r in css(x, "#job-history tbody tr")]
        wait(drv, lambda x: [e for e, _ in hist(x)][:1] == ["submitted"] and "started" in [e for e, _ in hist(x)])
        # an event that changes no state (a signal to its command; SIGCONT does nothing to sleep)
        # is news on the stream too (job.h: ev_news): the page shows it without a reload
        code, ans = d.api("POST", f"/v1/jobs/{jid}/kill?signal=CONT")
        assert code == 200, ans
        wait(drv, lambda x: "signaled" in [e for e, _ in hist(x)])
        assert d.api("POST", f"/v1/jobs/{jid}/stop")[0] == 200
        d.wait(jid)
        wait(drv, lambda x: [e for e, _ in hist(x)][-2:] == ["stopping", "ended"])
        events = [(e["event"], e["detail"]) for e in d.api("GET", f"/v1/jobs/{jid}?detail=1")[1]["detail"]["events"]]
        try:
            wait(drv, lambda x: hist(x) == events, 10)
        except Exception:
            assert hist(drv) == events
        assert "stopped by uid 0" in events[-1][1]
        drv.save_screenshot(os.path.join(shots, "job-history.png"))
        # a task's page, from its row: its own number and its array's
        go(drv, "#/jobs")
        click(drv, f'#jobs-table tr.task[data-id="{task["id"]}"] a')
        wait(drv, lambda x: x.find_element(By.ID, "job-number").text == str(task["number"]))
        assert drv.find_element(By.ID, "job-array-number").text == str(arr["number"])
        assert "SLURM_ARRAY_JOB_ID" in drv.find_element(By.ID, "job-array-number").find_element(By.XPATH, "..").text
        drv.save_screenshot(os.path.join(shots, "job-task.png"))
        # the array's page
        go(drv, f"#/jobs/{aid}")
        wait(drv, lambda x: x.find_element(By.ID, "job-number").text == str(arr["number"]))
        assert "SLURM_ARRAY_JOB_ID" in drv.find_element(By.ID, "job-number").find_element(By.XPATH, "..").text
        # a task opened by its address after a reload (not in the list the page loads)
        go(drv, f"#/jobs/{task['id']}")
        drv.refresh()
        wait(drv, lambda x: css(x, "#job-number") and x.find_element(By.ID, "job-number").text == str(task["number"]))
    finally:
        drv.quit()
        con.stop()
        for j in (jid, aid):
            d.rnx("job", "kill", j)
