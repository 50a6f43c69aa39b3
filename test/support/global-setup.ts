// Once per test run: a PostgreSQL (TEST_DATABASE_URL, or an embedded one in a temporary folder)
// and a template database migrated to the latest schema, which every test file clones.
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { PgBoss } from 'pg-boss'
import type { TestProject } from 'vitest/node'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/database/embedded-postgres.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { JOB_SCHEMA } from '../../src/sync/job-queue.ts'
import { databaseUrl } from './urls.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string
    templateDatabase: string
  }
}

export default async function setup(project: TestProject) {
  let embedded: EmbeddedPostgres | undefined
  let dataDir: string | undefined
  let serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) {
    dataDir = await mkdtemp(join(tmpdir(), 'crm-sync-test-'))
    await chmod(dataDir, 0o755) // the embedded server may run as the postgres user
    embedded = await startEmbeddedPostgres({ dataDir })
    serverUrl = embedded.url
  }

  const templateDatabase = `crm_sync_template_${process.pid}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`drop database if exists ${templateDatabase}`)
  await admin.query(`create database ${templateDatabase}`)
  const templateUrl = databaseUrl(serverUrl, templateDatabase)
  const pool = createPool(templateUrl, { max: 2 })
  try {
    await migrateToLatest(createDb(pool))
  } finally {
    await pool.end()
  }
  // pg-boss installs its schema at its first start; doing it once here makes every clone start fast.
  const boss = new PgBoss({ connectionString: templateUrl, schema: JOB_SCHEMA, max: 1 })
  await boss.start()
  await boss.stop({ graceful: false })

  project.provide('serverUrl', serverUrl)
  project.provide('templateDatabase', templateDatabase)

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`)
    await admin.end()
    await embedded?.stop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  }
}
