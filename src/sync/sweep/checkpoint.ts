// Where a sweep stands, saved with every page and reconciled batch: a retried job resumes from it.
import { z } from 'zod'

const walkCheckpoint = z.object({
  phase: z.literal('walk'),
  /** The next page to fetch; the pages before it are applied. */
  nextPage: z.number().int().min(1),
  /** An incremental walk stops after a page entirely older than this; null walks to the end. */
  watermark: z.iso.datetime({ offset: true }).nullable(),
  /**
   * The log's walk also stops at a page the mirror holds whole whose ids are all at or below this:
   * what the feed had read, and written, when the sweep was planned (plan/sweep.ts).
   */
  feedReadTo: z.number().int().optional(),
  /** The group of ties the last page applied ended in, which the next page may go on (ties.ts). */
  tie: z
    .object({
      time: z.number(),
      startPage: z.number().int().min(1),
      startIndex: z.number().int().min(0),
      endPage: z.number().int().min(1),
      positions: z.number().int().min(1),
      ids: z.array(z.union([z.number(), z.string()])),
      pageSize: z.number().int().min(1),
    })
    .optional(),
})
const reconcileCheckpoint = z.object({
  phase: z.literal('reconcile'),
  /** Unseen rows up to this id are settled: a number, or a string where ids are text (attachments). */
  afterId: z.union([z.number().int().min(0), z.string()]),
})
// Stored as jsonb by one version of the code and read by a later one: parsed, never trusted.
const checkpointSchema = z.discriminatedUnion('phase', [walkCheckpoint, reconcileCheckpoint])

export type WalkCheckpoint = z.infer<typeof walkCheckpoint>
export type ReconcileCheckpoint = z.infer<typeof reconcileCheckpoint>
export type Checkpoint = z.infer<typeof checkpointSchema>

/** An earlier attempt's checkpoint, or null when there is none or it cannot be read (start over). */
export function parseCheckpoint(value: unknown): Checkpoint | null {
  const parsed = checkpointSchema.safeParse(value)
  return parsed.success ? parsed.data : null
}
