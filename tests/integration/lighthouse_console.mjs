// Runs Lighthouse (accessibility and best practices) on console pages in one signed-in tab of
// Debian's chromium, for tests/integration/test_console_lighthouse.py.
//
// node lighthouse_console.mjs PREFIX SIGN_IN_URL HASH...
//   PREFIX: where npm installed lighthouse (scripts/install-deps.sh: /opt/joblet-test/lighthouse);
//   SIGN_IN_URL: the link rnx console printed; HASH: "#/gpus", "#/jobs/ID", ...
// Chromium is $CHROME_PATH. Prints one JSON line per page: {page, ms, url, scores, failing, warnings}.
//
// Why one tab: the console's page key lives in the signing-in tab's sessionStorage (docs/console.md),
// so every run reuses that tab (lighthouse's `page` argument) and keeps its storage
// (disableStorageReset); the session cookie is in the browser's jar.
import path from "node:path";

const [prefix, signIn, ...pages] = process.argv.slice(2);
const mod = (p) => import(path.join(prefix, "node_modules", p));
const {default: lighthouse} = await mod("lighthouse/core/index.js");
const {default: puppeteer} = await mod("puppeteer-core/lib/esm/puppeteer/puppeteer-core.js");

const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"],
});
const CATS = ["accessibility", "best-practices"];
try {
  const page = await browser.newPage();
  await page.goto(signIn);
  await page.waitForFunction(() => document.getElementById("live")?.textContent === "live", {timeout: 30000});
  const origin = new URL(signIn).origin;
  for (const hash of pages) {
    const url = origin + "/" + hash, t0 = Date.now();
    // throttlingMethod "simulate": the page is loaded as it is (no throttling either way; only
    // performance metrics, not audited here, are simulated), with Lighthouse's 1 s quiet windows;
    // "provided" raises each of its four waits per page to 5.25 s (the test: 183 s, now 148 s)
    // (Lighthouse's default maxWaitForLoad, 45 s, stays: 15 s cut pages short on a loaded machine,
    // four of ten in one run while a build ran beside it. A running job's page follows its log on
    // a request that stays open; it is of low priority (console.js), as Lighthouse's wait for a
    // loaded page expects of long-lived streams: before, each such page waited the whole 45 s and
    // its results were marked incomplete, 53 s a page and 163 s for the test against 71 s now)
    const r = await lighthouse(url, {
      onlyCategories: CATS, disableStorageReset: true, throttlingMethod: "simulate", logLevel: "error",
      output: "json",
    }, undefined, page);
    const lhr = r.lhr;
    const scores = Object.fromEntries(CATS.map((c) => [c, lhr.categories[c] ? lhr.categories[c].score : null]));
    const failing = [];
    for (const c of CATS) for (const ref of lhr.categories[c]?.auditRefs || []) {
      const a = lhr.audits[ref.id];
      if (!a || a.score === null || a.score >= 1 || ref.weight === 0) continue;
      const items = (a.details && a.details.items || []).slice(0, 5).map((it) =>
        it.node ? `${it.node.selector || ""} ${it.node.snippet || ""} ${it.node.explanation || ""}`.trim()
                : JSON.stringify(it).slice(0, 1000));
      failing.push({category: c, id: a.id, title: a.title, score: a.score, items});
    }
    // what the page showed: a signed-out page would pass while proving nothing
    const main = await page.evaluate(() => document.querySelector("main")?.innerText.slice(0, 4000) || "");
    console.log(JSON.stringify({page: hash, ms: Date.now() - t0, url: lhr.finalDisplayedUrl, scores, failing,
      warnings: lhr.runWarnings, error: lhr.runtimeError ? lhr.runtimeError.message : null, main}));
  }
} finally {
  await browser.close();
}
