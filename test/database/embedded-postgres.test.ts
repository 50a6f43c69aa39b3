// The ways an embedded PostgreSQL refuses to start, each with a message that says why. (A real
// start is covered by the global setup of every test run without TEST_DATABASE_URL, and by start.test.ts.)
import { readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { embeddedMajorVersion, startEmbeddedPostgres } from '../../src/database/embedded-postgres.ts'

async function dataDir(files: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'crm-sync-embedded-'))
  await mkdir(join(dir, 'postgres'))
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, 'postgres', name), content)
  return dir
}

describe('embedded PostgreSQL', () => {
  it('refuses a data directory of another PostgreSQL version', async () => {
    const dir = await dataDir({ PG_VERSION: '9.6\n' })
    await expect(startEmbeddedPostgres({ dataDir: dir })).rejects.toThrow(
      new RegExp(
        `holds a PostgreSQL 9 cluster, but this crm-sync embeds PostgreSQL ${embeddedMajorVersion()}`,
      ),
    )
  })

  it('refuses a data directory that a running process serves', async () => {
    const dir = await dataDir({
      PG_VERSION: `${embeddedMajorVersion()}\n`,
      'postmaster.pid': `${process.pid}\n`,
    })
    await expect(startEmbeddedPostgres({ dataDir: dir })).rejects.toThrow(
      `is in use by another process (pid ${process.pid})`,
    )
  })

  it('refuses a folder that holds something else', async () => {
    const dir = await dataDir({ 'notes.txt': 'mine' })
    await expect(startEmbeddedPostgres({ dataDir: dir })).rejects.toThrow(
      /is not empty but holds no PostgreSQL cluster/,
    )
  })

  it('refuses a port that is taken', async () => {
    const server: Server = createServer()
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    )
    try {
      await expect(startEmbeddedPostgres({ dataDir: await dataDir(), port })).rejects.toThrow(
        `port ${port} on 127.0.0.1 is already in use`,
      )
    } finally {
      server.close()
    }
  })

  it("runs the server in a process group of its own, out of reach of a terminal's Ctrl-C", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crm-sync-embedded-'))
    await chmod(dir, 0o755)
    const server = await startEmbeddedPostgres({ dataDir: dir })
    try {
      const group = (pid: number | 'self') =>
        readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2]
      expect(group(server.pid)).toBe(String(server.pid))
      expect(group(server.pid)).not.toBe(group('self'))
    } finally {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
