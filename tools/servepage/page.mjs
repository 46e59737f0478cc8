// Drives zoo serve's web page in headless Chromium (Debian's
// /usr/bin/chromium, through playwright-core): loads the page, classifies
// a text, streams a generation, uploads an image, and takes a screenshot.
// Prints one JSON object of what the page showed; serve's
// TestPageInChromium checks it against the server's own answers.
//
//   node page.mjs URL SCREENSHOT.png IMAGE.png
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, shot, image] = process.argv.slice(2);
if (!url || !shot || !image) {
  console.error("usage: node page.mjs URL SCREENSHOT.png IMAGE.png");
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), "zoo-servepage-"));
// A fresh --user-data-dir: playwright passes it for a persistent context.
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1000, height: 900 },
});
const out = { console: [] };
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") out.console.push(m.text()); });
  page.on("pageerror", (e) => out.console.push(String(e)));
  page.setDefaultTimeout(30000);
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  out.models = await page.$$eval("section.model", (ss) => ss.map((s) => [s.dataset.model, s.dataset.task]));

  const run = async (model) => {
    const card = page.locator(`section.model[data-model="${model}"]`);
    await card.locator("button.run").click();
    await page.waitForFunction((m) => {
      const s = document.querySelector(`section.model[data-model="${m}"]`);
      return s.dataset.state === "done" || s.dataset.state === "error";
    }, model);
    return card;
  };

  // Classify a text: labels with score bars.
  let card = page.locator('section.model[data-task="text-classification"]').first();
  const cls = await card.getAttribute("data-model");
  await card.locator("textarea").fill("a gripping film");
  card = await run(cls);
  out.classify = {
    state: await card.getAttribute("data-state"),
    labels: await card.locator(".bar .name").allTextContents(),
    scores: (await card.locator(".bar .score").allTextContents()).map(Number),
    // The bars as drawn: each fill's width over its track's.
    bars: await card.locator(".bar").evaluateAll((bs) => bs.map((b) =>
      b.querySelector(".fill").getBoundingClientRect().width / b.querySelector(".track").getBoundingClientRect().width)),
    error: await card.locator(".output.error").allTextContents(),
  };

  // Stream a generation: the text grows chunk by chunk from the SSE route.
  card = page.locator('section.model[data-task="text-generation"]').first();
  const gen = await card.getAttribute("data-model");
  await card.locator("textarea").fill("the cat");
  await card.locator("input.max").fill("12");
  card = await run(gen);
  const g = card.locator(".output");
  out.generate = {
    state: await card.getAttribute("data-state"),
    text: await g.textContent(),
    chunks: Number(await g.getAttribute("data-chunks")),
    done: await g.getAttribute("data-done"),
  };

  // Upload an image: its labels with score bars.
  card = page.locator('section.model[data-task="image-classification"]').first();
  const img = await card.getAttribute("data-model");
  await card.locator('input[type=file]').setInputFiles(image);
  card = await run(img);
  out.image = {
    state: await card.getAttribute("data-state"),
    labels: await card.locator(".bar .name").allTextContents(),
    error: await card.locator(".output.error").allTextContents(),
  };

  await page.screenshot({ path: shot, fullPage: true });
  out.screenshot = shot;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
