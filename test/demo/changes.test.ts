// The demo's stream of changes is valid by construction: whatever the seed and however long it runs,
// the sandbox accepts every change (no tag a record already has, nothing done to a deleted record,
// no record the sandbox would refuse), and the stream still makes every kind of change.
import { afterEach, describe, expect, it } from 'vitest'
import { changeStream, RefusedChange } from '../../demo/changes.ts'
import { type Sandbox, SandboxError, startSandbox } from '../../sandbox/index.ts'

let sandbox: Sandbox | undefined
afterEach(async () => {
  await sandbox?.stop()
  sandbox = undefined
})

/** Runs `count` changes of the stream against a freshly seeded sandbox; how often each kind was made. */
async function run(seed: number, count: number, seedSize: number): Promise<Map<string, number>> {
  sandbox = await startSandbox({ seedSize, seed })
  const changes = changeStream(sandbox, seed)
  const made = new Map<string, number>()
  for (let i = 0; i < count; i++) {
    const change = changes.next()
    made.set(change, (made.get(change) ?? 0) + 1)
  }
  await sandbox.stop()
  sandbox = undefined
  return made
}

describe('the demo change stream', () => {
  it('makes 300 changes the sandbox accepts, for each of 30 seeds', async () => {
    const kinds = new Set<string>()
    for (let seed = 0; seed < 30; seed++) {
      // A small account: records run out of free tags and get deleted, the cases that went wrong.
      for (const change of (await run(seed, 300, 10)).keys()) kinds.add(change)
    }
    for (const collection of ['people', 'companies', 'deals', 'projects']) {
      for (const change of ['create', 'update', 'tag', 'untag', 'destroy']) {
        expect(kinds).toContain(`${collection}.${change}`)
      }
    }
    expect(kinds).toContain('tasks.update')
    expect(kinds).toContain('contacts.create')
    expect(kinds).toContain('bookings.update')
  })

  it("keeps going as a long --follow does, on the demo's own account", async () => {
    // As `npm run demo -- --follow --random-seed 2`: 150 changes, then the follow stream (seed + 1).
    sandbox = await startSandbox({ seedSize: 300, seed: 2 })
    const first = changeStream(sandbox, 2)
    for (let i = 0; i < 150; i++) first.next()
    const follow = changeStream(sandbox, 3)
    const made = new Set<string>()
    for (let i = 0; i < 5000; i++) made.add(follow.next())
    expect(made).toContain('people.tag')
    expect(made).toContain('people.destroy')
  })

  it('reports a change the sandbox refuses all the same as a RefusedChange, and goes on', async () => {
    sandbox = await startSandbox({ seedSize: 10, seed: 1 })
    const { crm } = sandbox.control
    const update = crm.update
    crm.update = () => {
      throw new SandboxError(422, 'invalid people: {"name":["is odd"]}')
    }
    const changes = changeStream(sandbox, 1)
    let refused: unknown
    for (let i = 0; i < 50 && refused === undefined; i++) {
      try {
        changes.next()
      } catch (error) {
        refused = error
      }
    }
    expect(refused).toBeInstanceOf(RefusedChange)
    expect((refused as RefusedChange).message).toMatch(/^\w+\.update \(\w+ \d+\) refused: invalid people/)
    crm.update = update
    for (let i = 0; i < 50; i++) changes.next()
  })
})
