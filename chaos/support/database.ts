// Scratch databases on the machine's PostgreSQL (or CHAOS_DATABASE_URL, or an embedded one: see
// bench/support/database.ts): one per scenario, created empty (the engines migrate it, as a first
// start does) and dropped when the scenario's scope closes, whatever happened. The server itself is
// never stopped nor slowed: faults go through a proxy (proxy.ts).
import { randomBytes } from 'node:crypto'
import { type DatabaseServer, withClient, withDatabase } from '../../bench/support/database.ts'
import { createDb, createPool, type Db } from '../../src/store/database.ts'
import type { Scope } from './cleanup.ts'
import type { Target } from './proxy.ts'

export interface ScratchDatabase {
  name: string
  /** The database on the server, for the suite's own checks. */
  url: string
  db: Db
  /** Where the server listens, for a proxy in front of it. */
  target: Target
  /** The same database reached through `port` on loopback (a proxy). */
  urlVia(port: number): string
}

export async function createScratchDatabase(
  server: DatabaseServer,
  scenario: string,
  scope: Scope,
): Promise<ScratchDatabase> {
  const name = `crm_sync_chaos_${scenario.replaceAll('-', '_')}_${randomBytes(4).toString('hex')}`
  await withClient(server.url, (client) => client.query(`create database ${name}`))
  scope.defer(() =>
    withClient(server.url, (client) => client.query(`drop database if exists ${name} with (force)`)),
  )
  const url = withDatabase(server.url, name)
  const pool = createPool(url, { max: 3, applicationName: 'crm-sync:chaos' })
  // A connection still open when the database is dropped reports 57P01; that is expected here.
  pool.on('error', () => {})
  const db = createDb(pool)
  scope.defer(() => db.destroy())
  const parsed = new URL(url)
  return {
    name,
    url,
    db,
    target: { host: parsed.hostname, port: Number(parsed.port || 5432) },
    urlVia(port) {
      const via = new URL(url)
      via.hostname = '127.0.0.1'
      via.port = String(port)
      return via.toString()
    },
  }
}
