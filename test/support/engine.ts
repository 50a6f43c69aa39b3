// crm-sync started in-process, as `npm start` composes it, against the sandbox and a test database.

import { afterEach } from 'vitest'
import type { Sandbox } from '../../sandbox/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createLogger, type Logger } from '../../src/log.ts'
import { type Running, start } from '../../src/service.ts'
import { dropTestDatabase, type TestDatabase } from './database.ts'

export const ENGINE_SECRET = 'engine-secret-0123456789abcdef'

export interface Engine extends Running {
  publicUrl: string
}

export async function startEngine(
  sandbox: Sandbox,
  databaseUrl: string,
  env: Record<string, string> = {},
  logger?: Logger,
): Promise<Engine> {
  const port = await freePort()
  const publicUrl = `http://127.0.0.1:${port}`
  const config = parseConfig({
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    RESERVATION_BASE_URL: sandbox.reservationUrl,
    RESERVATION_API_KEY: sandbox.reservationApiKey,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    PUBLIC_URL: publicUrl,
    WEBHOOK_SECRET: ENGINE_SECRET,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // The details pass reads every person's historic events and assistants in the background: tests of
    // other things leave it off, so that the requests they count are their own. Tests of the pass
    // (test/sync/person-details.test.ts) turn it on.
    DETAILS_BUDGET_PERCENT: '0',
    ...env,
  })
  const running = await start(config, logger ?? createLogger({ level: config.logLevel, pretty: false }))
  return { ...running, publicUrl }
}

/**
 * What a test of the whole engine starts: each function registers one and returns it. After each test
 * the engine is stopped, then the sandbox, then the database dropped (the last of each registered).
 */
export interface EngineRig {
  sandbox(sandbox: Sandbox): Sandbox
  database(database: TestDatabase): TestDatabase
  engine(engine: Engine): Engine
}

export function useEngineRig(): EngineRig {
  let started: { sandbox?: Sandbox; database?: TestDatabase; engine?: Engine } = {}
  afterEach(async () => {
    const { sandbox, database, engine } = started
    started = {}
    await engine?.stop()
    await sandbox?.stop()
    if (database) await dropTestDatabase(database)
  })
  return {
    sandbox: (sandbox) => (started.sandbox = sandbox),
    database: (database) => (started.database = database),
    engine: (engine) => (started.engine = engine),
  }
}
