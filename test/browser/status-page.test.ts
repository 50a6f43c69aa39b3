// The status page in a real browser: Debian's chromium driven by playwright-core, against a running
// engine and the sandbox. Signs in; sees every table on time after the first sync; sees the
// reservation tables turn late while their upstream stops answering, and on time again; starts a
// resync from a table's button and follows its run to the end; replays a rejected delivery and an
// applied one from their pages; no console errors on the way. Skipped
// with one line where chromium is not installed (.ci/run installs it).
import { existsSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { webhookPath } from '../../src/receiver/app.ts'
import { createTestDatabase } from '../support/database.ts'
import { ENGINE_SECRET, startEngine, useEngineRig } from '../support/engine.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const TOKEN = 'admin-token-0123456789abcdef'
const present = existsSync(CHROMIUM)
if (!present)
  console.log(`status page browser test skipped: no chromium at ${CHROMIUM} (apt install chromium)`)

/** Loads `path` again until `done` holds of the page, or fails at the deadline. */
async function reloadUntil(page: Page, path: string, done: () => Promise<boolean>, what: string, ms: number) {
  const deadline = Date.now() + ms
  for (;;) {
    await page.goto(path)
    if (await done()) return
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await page.waitForTimeout(500) // the page's own refresh is 15 s: the test reads it more often
  }
}

describe.skipIf(!present)('the status page in chromium', () => {
  const rig = useEngineRig()
  let browser: Browser

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  })
  afterAll(async () => {
    await browser?.close()
  })

  it('shows each table on time, late while its upstream hangs, then on time; resyncs and replays from buttons', async () => {
    const sandbox = rig.sandbox(await startSandbox({ seedSize: 20, behaviour: { crmRateLimit: null } }))
    const database = rig.database(await createTestDatabase())
    const engine = rig.engine(
      await startEngine(sandbox, database.url, {
        ADMIN_TOKEN: TOKEN,
        INCREMENTAL_SYNC_INTERVAL: '10',
        UPSTREAM_TIMEOUT_SECONDS: '60',
        CRM_RATE_LIMIT: '1000',
        DETAILS_BUDGET_PERCENT: '20',
      }),
    )
    const context = await browser.newContext({ baseURL: engine.publicUrl })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))

    await page.goto('/')
    expect(new URL(page.url()).pathname).toBe('/login')
    await page.getByLabel('Admin token').fill(TOKEN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((url) => url.pathname === '/')

    const states = () =>
      page
        .locator('#tables tbody tr')
        .evaluateAll((rows) =>
          rows.map((row) => [row.getAttribute('data-table'), row.getAttribute('data-state')] as const),
        )
    const allOnTime = async () => {
      const shown = await states()
      return shown.length > 0 && shown.every(([, state]) => state === 'on time')
    }
    await reloadUntil(page, '/', allOnTime, 'every table on time after the first sync', 60_000)
    expect((await states()).map(([table]) => table)).toContain('reservations.bookings')
    // The details pass reads every person's historic events and assistants after the first sync.
    const details = page.locator('#details tr[data-details="crm.people"]')
    const allRead = async () => /20 of 20 \(100%\)/.test((await details.textContent()) ?? '')
    await reloadUntil(page, '/', allRead, "every person's details read", 60_000)
    expect(await details.textContent()).toMatch(/at most 20% of the budget/)

    // The reservation service stops answering: its tables' sweeps hang past one interval.
    sandbox.control.setFaults({ reservation: { latencyMs: 30_000 } })
    const bookingsState = async () =>
      (await states()).find(([table]) => table === 'reservations.bookings')?.[1] ?? null
    await reloadUntil(page, '/', async () => (await bookingsState()) === 'late', 'bookings late', 40_000)
    // The worst first: the late tables lead, the CRM's stay on time.
    expect((await states())[0]?.[1]).toBe('late')
    expect((await states()).find(([table]) => table === 'crm.people')?.[1]).toBe('on time')
    sandbox.control.resetFaults()
    await reloadUntil(page, '/', allOnTime, 'every table on time again', 60_000)

    // Resync one table from its button, and follow the run to its end.
    await page.locator('tr[data-table="crm.people"]').getByRole('button', { name: 'Resync' }).click()
    await page.waitForURL(/\/runs\/\d+/)
    expect(await page.getByRole('status').textContent()).toMatch(/Run started|being swept already/)
    const runPath = new URL(page.url()).pathname
    await reloadUntil(
      page,
      runPath,
      async () => (await page.locator('#run-status').getAttribute('data-status')) === 'succeeded',
      'the resync run succeeded',
      30_000,
    )
    await page.getByRole('link', { name: 'Runs', exact: true }).click()
    await page.waitForURL((url) => url.pathname === '/runs')
    expect(await page.locator(`#runs tr[data-run="${runPath.split('/').at(-1)}"]`).count()).toBe(1)

    // A delivery the receiver rejected, and one it applied, replayed from their pages.
    const rejected = await fetch(`${engine.publicUrl}${webhookPath(ENGINE_SECRET, 'person', 'update')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hello: 'not a delivery' }),
    })
    expect(rejected.status).toBe(400)
    await page.getByRole('link', { name: 'Deliveries', exact: true }).click()
    await page.getByLabel('Outcome').selectOption('rejected')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.locator('#deliveries tr[data-outcome="rejected"] a').first().click()
    await page.getByRole('button', { name: 'Replay' }).click()
    expect(await page.getByRole('status').textContent()).toMatch(/still rejected/)

    const [person] = sandbox.control.crm.liveIds('people') as [number]
    sandbox.control.crm.update('people', person, { first_name: 'Replayed' })
    await reloadUntil(
      page,
      '/deliveries?outcome=applied&model=person',
      async () => (await page.locator('#deliveries tr[data-outcome="applied"]').count()) > 0,
      'a delivery applied',
      30_000,
    )
    await page.locator('#deliveries tr[data-outcome="applied"] a').first().click()
    const deliveryPath = new URL(page.url()).pathname
    await page.getByRole('button', { name: 'Replay' }).click()
    expect(await page.getByRole('status').textContent()).toMatch(/queued/)
    await reloadUntil(
      page,
      deliveryPath,
      async () => (await page.locator('#delivery-outcome').getAttribute('data-outcome')) === 'applied',
      'the replayed delivery applied again',
      30_000,
    )

    expect(problems).toEqual([])

    // pg-boss's own dashboard, behind the same sign-in. It asks Google Fonts for its typeface, which
    // this machine cannot reach: that one console error is its own, not the page's.
    await page.getByRole('link', { name: 'Jobs', exact: true }).click()
    await page.waitForURL((url) => url.pathname.startsWith('/jobs'))
    // Its overview lists only some queues (which ones depends on their jobs); its queues page all.
    await page.goto('/jobs/queues')
    await page.getByText('resource-sweep').first().waitFor()
    expect(problems.filter((problem) => !/ERR_NAME_NOT_RESOLVED/.test(problem))).toEqual([])
    await context.close()
  }, 180_000)
})
