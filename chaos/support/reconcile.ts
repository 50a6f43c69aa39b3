// The full reconciliation that "in sync" allows for changes that leave `updated_at` alone (a tag added
// without a webhook): docs/how-sync-works.md. A scenario asks for one after its last change, through
// the admin API as an operator would, and only then expects the mirror to match the truth.
//
// A full run asked for while another one is queued or running leaves out the resources that run
// covers (or is refused with 409 when it covers them all); that run may have read its pages before
// the last change. So the request is repeated once those runs have ended, until a run that covers
// every resource by itself was created after the last change; that run must succeed.
import { CHAOS_ADMIN_TOKEN } from './engine.ts'
import { sleep } from './scenario.ts'

export interface Reconciliation {
  runId: number
  status: string
  /** Requests refused or partly covered before the run that counts was created. */
  repeats: number
}

const headers = { authorization: `Bearer ${CHAOS_ADMIN_TOKEN}`, 'content-type': 'application/json' }

interface Requested {
  status: number
  runId: number | undefined
  /** Runs that already covered some of the resources asked for. */
  covering: number[]
}

/** POST /admin/resync {"mode":"full"}. */
export async function requestFullRun(url: string): Promise<Requested> {
  const response = await fetch(`${url}/admin/resync`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ mode: 'full' }),
  })
  const body = (await response.json().catch(() => ({}))) as {
    run_id?: number
    covered?: { run_id: number }[]
  }
  return {
    status: response.status,
    runId: body.run_id,
    covering: [...new Set((body.covered ?? []).map((entry) => entry.run_id))],
  }
}

/** Waits until run `id` has ended; resolves with its status. */
export async function runEnded(url: string, id: number, deadline: number): Promise<string> {
  for (;;) {
    const response = await fetch(`${url}/admin/runs/${id}`, { headers }).catch(() => undefined)
    const body = response?.ok ? ((await response.json()) as { status: string }) : undefined
    if (body && (body.status === 'succeeded' || body.status === 'failed')) return body.status
    if (Date.now() > deadline) throw new Error(`run ${id} had not ended by the deadline (${body?.status})`)
    await sleep(250)
  }
}

/**
 * Asks for a full run of every resource that starts after this call, waits for it to end and returns
 * it; throws when `timeoutMs` passes first or the admin API answers something else than 202 or 409.
 */
export async function reconcile(url: string, timeoutMs: number): Promise<Reconciliation> {
  const deadline = Date.now() + timeoutMs
  for (let repeats = 0; ; repeats++) {
    const asked = await requestFullRun(url)
    if (asked.status === 409 && asked.runId !== undefined) {
      await runEnded(url, asked.runId, deadline)
      continue
    }
    if (asked.status !== 202 || asked.runId === undefined) {
      throw new Error(`POST /admin/resync {"mode":"full"} answered ${asked.status}`)
    }
    for (const id of asked.covering) await runEnded(url, id, deadline)
    const status = await runEnded(url, asked.runId, deadline)
    if (asked.covering.length === 0) return { runId: asked.runId, status, repeats }
  }
}
