// `npm run screenshots`: the status page's screenshots in docs/screenshots/, taken by Debian's chromium
// (playwright-core) against the demo's world: the sandbox, an embedded PostgreSQL and crm-sync in this
// process. Signs in, waits for the first sync, starts a resync of crm.people from its button, changes
// a person, and takes the sign-in form, the overview, that run, the runs, the deliveries and one. CHROMIUM_PATH overrides
// /usr/bin/chromium.
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type Page } from 'playwright-core'
import { startWorld } from '../demo/world.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const OUT = join(import.meta.dirname, '..', 'docs', 'screenshots')
const VIEWPORT = { width: 1280, height: 900 }

async function reloadUntil(page: Page, path: string, done: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 120_000
  for (;;) {
    await page.goto(path)
    if (await done()) return
    if (Date.now() > deadline) throw new Error(`${what}: not within 120 s`)
    await page.waitForTimeout(1000)
  }
}

const world = await startWorld({ seedSize: 60, randomSeed: 1, step: (text) => console.log(text) })
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
try {
  await mkdir(OUT, { recursive: true })
  const page = await browser.newPage({ baseURL: world.config.publicUrl ?? '', viewport: VIEWPORT })
  const shoot = async (name: string) => {
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true })
    console.log(`docs/screenshots/${name}.png`)
  }
  await page.goto('/login')
  await shoot('login')
  await page.getByLabel('Admin token').fill(world.config.adminToken ?? '')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  const allOnTime = async () => {
    const states = await page
      .locator('#tables tbody tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-state')))
    return states.length > 0 && states.every((state) => state === 'on time')
  }
  await reloadUntil(page, '/', allOnTime, 'every table on time')
  await shoot('overview')
  await page.locator('tr[data-table="crm.people"]').getByRole('button', { name: 'Resync' }).click()
  await page.waitForURL(/\/runs\/\d+/)
  const run = new URL(page.url()).pathname
  await reloadUntil(
    page,
    run,
    async () => (await page.locator('#run-status').getAttribute('data-status')) === 'succeeded',
    'the resync',
  )
  await shoot('run')
  await page.goto('/runs')
  await shoot('runs')
  world.sandbox.control.crm.update('people', world.sandbox.control.crm.liveIds('people')[0] as number, {
    first_name: 'Changed',
  })
  await reloadUntil(
    page,
    '/deliveries',
    async () => (await page.locator('#deliveries tr[data-outcome="applied"]').count()) > 0,
    'a delivery applied',
  )
  await shoot('deliveries')
  await page.locator('#deliveries tr[data-outcome="applied"] a').first().click()
  await shoot('delivery')
  await page.goto('/jobs')
  await page.getByText('resource-sweep').first().waitFor()
  await shoot('jobs')
} finally {
  await browser.close()
  await world.stop({ keepLog: false })
}
