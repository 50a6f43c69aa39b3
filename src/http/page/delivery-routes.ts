// The status page's deliveries: the list and its filter, one delivery, and its replay
// (sync/delivery/replay.ts); a replay of every rejected or failed delivery since a time, worked by a
// job (sync/delivery/replay-all.ts), and its cancel. Mounted by routes.ts behind the sign-in and the
// same-origin check.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { Db } from '../../store/database.ts'
import {
  cancelDeliveryReplay,
  createDeliveryReplay,
  latestDeliveryReplays,
  readDeliveryReplay,
} from '../../store/delivery-replays.ts'
import { listDeliveries, readDelivery } from '../../store/inbox-view.ts'
import { replayDelivery } from '../../sync/delivery/replay.ts'
import { deliveriesPage, deliveryPage, OUTCOMES } from './deliveries.ts'
import { type Frame, ROOT } from './layout.ts'

const PAGE = 50

/** Replays of every rejected or failed delivery listed under the form. */
const REPLAYS_SHOWN = 5

const blankAsUndefined = (value: unknown) => (value === '' ? undefined : value)
// A datetime-local field: no zone, read as UTC (the page shows UTC).
const utcDateTime = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/, 'must be a date and time such as 2026-11-27T10:00')
  .transform((value) => new Date(`${value}Z`))
const filterQuery = z.object({
  outcome: z.preprocess(
    blankAsUndefined,
    z.enum(Object.keys(OUTCOMES) as [keyof typeof OUTCOMES]).optional(),
  ),
  model: z.preprocess(blankAsUndefined, z.string().max(40).optional()),
  event: z.preprocess(blankAsUndefined, z.string().max(40).optional()),
  since: z.preprocess(blankAsUndefined, utcDateTime.optional()),
  before: z.preprocess(blankAsUndefined, z.coerce.number().int().positive().optional()),
})

const replayForm = z.object({
  since: utcDateTime,
  // Checkboxes: one value, several, or none.
  statuses: z.preprocess(
    (value) => (value === undefined ? [] : [value].flat()),
    z.array(z.enum(['rejected', 'failed'])).min(1, 'must name rejected, failed or both'),
  ),
})

const NOTICES: Record<string, string> = {
  queued: 'Replayed: the delivery is queued, and the workers apply it again.',
  waiting: 'The delivery waits to be applied already.',
}

export interface DeliveryRoutesOptions {
  /**
   * Sends the job of a replay of deliveries inside `trx`, the transaction that creates its row.
   * Without it the page offers no such replay.
   */
  sendReplay?: (trx: Db, replayId: number) => Promise<void>
  /** Whose page: its routes and links start with `frame.base` (default: the root). */
  frame?: Frame
}

export function mountDeliveryRoutes(app: Hono, db: Db, options: DeliveryRoutesOptions = {}): void {
  const { sendReplay, frame = ROOT } = options
  const at = (path: string) => `${frame.base}${path}`
  app.get(at('/deliveries'), async (c) => {
    const parsed = filterQuery.safeParse(c.req.query())
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`)
      return c.text(`bad filter: ${problems.join('; ')}`, 400)
    }
    const { outcome, ...rest } = parsed.data
    const filter = { ...rest, status: outcome ? OUTCOMES[outcome] : undefined }
    const deliveries = await listDeliveries(db, { ...filter, limit: PAGE + 1 })
    const shown = deliveries.slice(0, PAGE)
    const last = shown.at(-1)
    const next =
      deliveries.length > PAGE && last
        ? new URLSearchParams({ ...c.req.query(), before: String(last.id) }).toString()
        : null
    const replays = sendReplay ? await latestDeliveryReplays(db, REPLAYS_SHOWN) : null
    return c.html(deliveriesPage({ deliveries: shown, filter: { ...filter, outcome }, next, replays, frame }))
  })

  if (sendReplay) {
    app.post(at('/deliveries/replays'), async (c) => {
      const parsed = replayForm.safeParse(await c.req.parseBody({ all: true }))
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`)
        return c.text(`bad replay: ${problems.join('; ')}`, 400)
      }
      const { since, statuses } = parsed.data
      // The row and its job commit together: no replay without its job, no job without its row.
      await db.transaction().execute(async (trx) => {
        const replay = await createDeliveryReplay(trx, { since, statuses: [...new Set(statuses)] })
        await sendReplay(trx, replay.id)
      })
      return c.redirect(at('/deliveries'), 303)
    })

    app.post(at('/deliveries/replays/:id{[0-9]+}/cancel'), async (c) => {
      const id = Number(c.req.param('id'))
      // A replay that ended meanwhile stays as it ended.
      if (!(await cancelDeliveryReplay(db, id)) && !(await readDeliveryReplay(db, id)))
        return c.text(`no replay ${id}`, 404)
      return c.redirect(at('/deliveries'), 303)
    })
  }

  app.get(at('/deliveries/:id{[0-9]+}'), async (c) => {
    const row = await readDelivery(db, Number(c.req.param('id')))
    if (!row) return c.text('no such delivery', 404)
    const notice =
      NOTICES[c.req.query('notice') ?? ''] ??
      (c.req.query('notice') === 'rejected' ? 'Replayed: still rejected.' : undefined)
    return c.html(deliveryPage(row, { notice, frame }))
  })

  app.post(at('/deliveries/:id{[0-9]+}/replay'), async (c) => {
    const id = Number(c.req.param('id'))
    const result = await replayDelivery(db, id)
    if (result.outcome === 'unknown') return c.text(`no delivery ${id}`, 404)
    return c.redirect(at(`/deliveries/${id}?notice=${result.outcome}`), 303)
  })
}
