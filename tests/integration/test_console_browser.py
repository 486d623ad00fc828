"""The web console in Debian's chromium, headless, driven through chromium-driver by
python3-selenium (no browser download): opened through `rnx console` on a simulated DGX H100,
it follows jobs, a log and a GPU drain live, without reloading; a non-admin sees no admin
actions and none of another user's jobs. Screenshots of every page go to $CONSOLE_SCREENSHOTS,
else to the test's temporary directory."""
import os
import shutil
import time

import pytest

from conftest import ROOT
from console_util import Console

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
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


def browser(width=1280, height=800):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"]:
        o.add_argument(a)
    return webdriver.Chrome(service=Service(DRIVER), options=o)


@pytest.fixture
def shots(tmp_path):
    d = os.environ.get("CONSOLE_SCREENSHOTS") or str(tmp_path / "screenshots")
    os.makedirs(d, exist_ok=True)
    return d


def wait(drv, cond, secs=15):
    # pages are redrawn as events come: an element found may be replaced before it is read
    return WebDriverWait(drv, secs, poll_frequency=0.1,
                         ignored_exceptions=[StaleElementReferenceException]).until(cond)


def css(drv, sel):
    return drv.find_elements(By.CSS_SELECTOR, sel)


def go(drv, page):
    drv.execute_script("location.hash = arguments[0]", page)


def test_console_in_chromium(fresh_daemon, shots):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    con = Console(d)
    drv = browser()
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
        btn = wait(drv, lambda x: css(x, '#admin-gpus tr[data-index="3"] button[data-action="drain"]'))[0]
        btn.click()
        wait(drv, EC.alert_is_present()).accept()
        wait(drv, lambda x: css(x, '#admin-gpus tr[data-index="3"] .badge[data-state="draining"]'))
        wait(drv, lambda x: css(x, '#audit tbody tr'))
        drv.save_screenshot(os.path.join(shots, "admin.png"))
        go(drv, "#/gpus")
        wait(drv, lambda x: css(x, 'article.gpu[data-index="3"][data-state="draining"]'))

        go(drv, "#/history")
        wait(drv, lambda x: css(x, "#hist-users"))
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
    user = Console(d, uid=UID)
    drv = browser()
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


def test_gpu_samples_draw_live(fresh_daemon, shots, tmp_path):
    """On the fake NVML (samples every 200 ms): sparklines fill in, a GPU's utilization and
    temperature follow what the driver says, an XID shows on its card — all without reloading."""
    from conftest import BUILD
    lib = os.path.join(BUILD, "tests", "fakes", "libnvidia-ml.so.1")
    if not os.path.exists(lib):
        pytest.skip("the fake NVML was not built")
    fix = os.path.join(FIX, "dgx-h100")
    events = tmp_path / "events"
    events.write_text("")
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {lib}\n  proc_root: {fix}/proc\n  sys_root: {fix}/sys\n"
                     f"  health_interval_ms: 200\n  scrub: 0\n",
                     env={"FAKE_NVML_FIXTURE": f"{fix}/machine.json", "FAKE_NVML_EVENTS": str(events)})
    con = Console(d)
    drv = browser()
    try:
        drv.get(con.url)
        wait(drv, lambda x: len(css(x, "#gpu-cards article.gpu")) == 8)
        wait(drv, lambda x: len(css(x, 'article.gpu[data-index="0"] svg.spark polyline')) == 3)
        with open(events, "a") as f:
            f.write("util 0 83\ntemp 0 71\npower 0 455\nxid 0 13\n")
        card = 'article.gpu[data-index="0"]'
        wait(drv, lambda x: all(t in x.find_element(By.CSS_SELECTOR, card).text for t in ("83 %", "71 °C", "455 W")))
        wait(drv, lambda x: "XID 13" in x.find_element(By.CSS_SELECTOR, card).text)
        drv.save_screenshot(os.path.join(shots, "gpus-live.png"))
    finally:
        drv.quit()
        con.stop()
