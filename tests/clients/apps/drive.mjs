// Drive the host page in headless Chromium (Debian's: playwright-core brings no browser of
// its own) as a user would: wait for the widget to show the gift ideas, press its "Twice
// the budget" button, wait for the view to change, and take a screenshot.
//
//   node tests/clients/apps/drive.mjs CHROMIUM URL SCREENSHOT.png
//
// Prints one JSON object on stdout: the gift names before and after the button, the
// title, the host's record (window.host) and the page's console; exits 1 if a step failed
// (the object then has "error").

import { chromium } from 'playwright-core';

const [executablePath, url, screenshot] = process.argv.slice(2);
const TIMEOUT = 30000;
const report = { console: [] };

const browser = await chromium.launch({
  executablePath,
  // as root Chromium needs --no-sandbox; the rest keep it off the network it would call
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 800, height: 700 } });
  page.setDefaultTimeout(TIMEOUT);
  page.on('console', (message) => report.console.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => report.console.push(`pageerror: ${error.message}`));
  await page.goto(url);
  await page.waitForFunction(() => window.host && (window.host.ready || window.host.error));
  const widget = page.frameLocator('#widget');
  const names = widget.locator('.gift-name');
  const error = await page.evaluate(() => window.host.error);
  if (error) {
    throw new Error(`the host failed: ${error}`);
  }
  await names.first().waitFor();
  report.before = await names.allTextContents();
  report.titleBefore = await widget.locator('#title').textContent();
  await widget.locator('#more').click();
  // the new result has come when the title names another budget
  await widget.locator('#title').filter({ hasNotText: report.titleBefore }).waitFor();
  report.after = await names.allTextContents();
  report.titleAfter = await widget.locator('#title').textContent();
  report.status = await widget.locator('#status').textContent();
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  failed = true;
  report.error = String(error?.stack || error);
} finally {
  try {
    const pages = browser.contexts().flatMap((context) => context.pages());
    if (pages.length) {
      report.host = await pages[0].evaluate(() => window.host ?? null);
    }
  } catch (error) {
    report.hostError = String(error);
  }
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(failed ? 1 : 0);
