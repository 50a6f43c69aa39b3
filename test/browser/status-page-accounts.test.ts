// The status page of several accounts in a real browser (Debian's chromium, playwright-core): the
// engine as `npm start` composes it with an ACCOUNTS_FILE of two accounts, each against a sandbox of
// its own. Signs in once at /login; sees the index of both accounts at /; follows north's name to its
// overview (its tables) and its Runs page, whose links stay under /accounts/north; comes back to the
// index; no console errors on the way. Skipped with one line where chromium is not installed.
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createLogger } from '../../src/log.ts'
import { type Running, start } from '../../src/service.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const TOKEN = 'admin-token-0123456789abcdef'
const NAMES = ['north', 'south'] as const
const present = existsSync(CHROMIUM)
if (!present)
  console.log(
    `status page (accounts) browser test skipped: no chromium at ${CHROMIUM} (apt install chromium)`,
  )

describe.skipIf(!present)('the status page of several accounts in chromium', () => {
  const sandboxes: Sandbox[] = []
  let database: TestDatabase | undefined
  let engine: Running | undefined
  let folder: string | undefined
  let browser: Browser | undefined
  let baseURL: string

  beforeAll(async () => {
    const urls: Record<string, string> = {}
    for (const name of NAMES) {
      const sandbox = await startSandbox({
        seedSize: 5,
        crmApiKey: `${name}-crm-key-0001`,
        behaviour: { crmRateLimit: null },
      })
      sandboxes.push(sandbox)
      urls[name] = sandbox.crmUrl
    }
    folder = await mkdtemp(join(tmpdir(), 'crm-sync-page-accounts-'))
    const file = join(folder, 'accounts.yaml')
    await writeFile(
      file,
      `accounts:\n${NAMES.map((name) => `  ${name}:\n    crm: { base_url: ${urls[name]}, api_key_env: ${name.toUpperCase()}_CRM_KEY, rate_limit: 1000 }\n`).join('')}`,
    )
    database = await createTestDatabase()
    const port = await freePort()
    baseURL = `http://127.0.0.1:${port}`
    const config = parseConfig({
      ACCOUNTS_FILE: file,
      NORTH_CRM_KEY: 'north-crm-key-0001',
      SOUTH_CRM_KEY: 'south-crm-key-0001',
      DATABASE_URL: database.url,
      HOST: '127.0.0.1',
      PORT: String(port),
      ADMIN_TOKEN: TOKEN,
      DETAILS_BUDGET_PERCENT: '0',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    })
    engine = await start(config, createLogger({ level: config.logLevel, pretty: false }))
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await engine?.stop()
    for (const sandbox of sandboxes) await sandbox.stop()
    if (database) await dropTestDatabase(database)
    if (folder) await rm(folder, { recursive: true, force: true })
  })

  it('signs in once, lists both accounts, and follows one to its overview and its runs', async () => {
    const context = await (browser as Browser).newContext({ baseURL })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))

    await page.goto('/accounts/north/runs')
    expect(new URL(page.url()).pathname).toBe('/login')
    await page.getByLabel('Admin token').fill(TOKEN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((url) => url.pathname === '/')

    const accounts = await page
      .locator('#accounts tbody tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-account')))
    expect([...accounts].sort()).toEqual([...NAMES])

    await page.locator('#accounts').getByRole('link', { name: 'north', exact: true }).click()
    await page.waitForURL((url) => url.pathname === '/accounts/north/')
    expect(await page.locator('#account').textContent()).toBe('north')
    expect(await page.locator('#tables tr[data-table="crm.people"]').count()).toBe(1)
    expect(await page.locator('#tables tr[data-table="reservations.bookings"]').count()).toBe(0)

    await page.getByRole('link', { name: 'Runs', exact: true }).click()
    await page.waitForURL((url) => url.pathname === '/accounts/north/runs')
    // The first run starts with the engine (a tick of the queue): north's own, linked under its path.
    const runs = page.locator('#runs tbody tr')
    for (const deadline = Date.now() + 20_000; (await runs.count()) === 0; await page.reload()) {
      if (Date.now() > deadline) throw new Error("no run on north's Runs page within 20 s")
      await page.waitForTimeout(250)
    }
    const run = runs.first()
    const id = await run.getAttribute('data-run')
    expect(await run.getByRole('link', { name: id ?? '', exact: true }).getAttribute('href')).toBe(
      `/accounts/north/runs/${id}`,
    )

    await page.getByRole('link', { name: 'Accounts', exact: true }).click()
    await page.waitForURL((url) => url.pathname === '/')
    expect(await page.locator('#accounts tbody tr').count()).toBe(NAMES.length)
    expect(problems).toEqual([])
    await context.close()
  }, 60_000)
})
