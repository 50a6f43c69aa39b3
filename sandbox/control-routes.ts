// The control API over HTTP, under /__sandbox on both services: a path no client of the real
// services would use. Collections are those of the tables of kinds (kinds.ts, reservation-kinds.ts).
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { type CrmCollection, type Fields, type SandboxControl, SandboxError } from './control.ts'
import { fieldErrors, idParam, isObject } from './http.ts'
import { isPlural } from './kinds.ts'
import { isReservationCollection } from './reservation-kinds.ts'
import type { ReservationCollection } from './reservation-rows.ts'
import { SEEDED_RESOURCES } from './seed.ts'

const size = z.number().int().min(0)
const seedInput = z.object({
  count: z.union([size, z.partialRecord(z.enum(SEEDED_RESOURCES), size)]),
  seed: z.number().int().optional(),
})

export function controlRoutes(control: SandboxControl): Hono {
  const app = new Hono()
  app.onError((error, c) => {
    if (error instanceof SandboxError)
      return c.json({ error: error.message, errors: error.errors }, error.status)
    if (error instanceof z.ZodError)
      return c.json({ error: 'invalid settings', errors: fieldErrors(error) }, 422)
    throw error
  })
  const body = async (c: Context): Promise<Fields> => {
    const parsed: unknown = await c.req.json().catch(() => ({}))
    return isObject(parsed) ? parsed : {}
  }
  const idOf = (c: Context, name = 'id') => {
    const id = idParam(c.req.param(name))
    if (id === null) throw new SandboxError(404, `no such id: ${c.req.param(name)}`)
    return id
  }

  app.get('/faults', (c) => c.json(control.faults()))
  app.patch('/faults', async (c) => c.json(control.setFaults(await body(c))))
  app.delete('/faults', (c) => c.json(control.resetFaults()))
  app.get('/behaviour', (c) => c.json(control.behaviour()))
  app.patch('/behaviour', async (c) => c.json(control.setBehaviour(await body(c))))
  app.get('/undocumented-paging', (c) => c.json(control.undocumentedPaging()))
  app.patch('/undocumented-paging', async (c) => c.json(control.setUndocumentedPaging(await body(c))))
  app.get('/counters', (c) => c.json(control.counters()))
  app.delete('/counters', (c) => {
    control.resetCounters()
    return c.json(control.counters())
  })
  app.post('/deliveries/drain', async (c) => {
    await control.drainDeliveries()
    return c.json(control.counters().deliveries)
  })
  app.post('/seed', async (c) => {
    const parsed = seedInput.safeParse(await body(c))
    if (!parsed.success) throw new SandboxError(422, 'expected {"count": n | {"people": n, ...}, "seed"?: n}')
    control.seed(parsed.data)
    return c.json({ seeded: parsed.data.count })
  })

  const crmCollection = (c: Context): CrmCollection => {
    const name = c.req.param('collection')
    if (!isPlural(name)) throw new SandboxError(404, `no CRM collection ${name}`)
    return name
  }
  const reservationCollection = (c: Context): ReservationCollection => {
    const name = c.req.param('collection')
    if (!isReservationCollection(name)) throw new SandboxError(404, `no reservation collection ${name}`)
    return name
  }
  const truth = (live: number[], deleted: number[]) => ({ live, deleted })

  app.get('/crm/hooks', (c) => c.json(control.crm.hooks()))
  app.get('/crm/:collection', (c) => {
    const collection = crmCollection(c)
    return c.json(truth(control.crm.liveIds(collection), control.crm.deletedIds(collection)))
  })
  app.get('/crm/:collection/:id', (c) => {
    const record = control.crm.get(crmCollection(c), idOf(c))
    if (!record) throw new SandboxError(404, 'no such record')
    return c.json(record)
  })
  app.post('/crm/:collection', async (c) => c.json(control.crm.create(crmCollection(c), await body(c)), 201))
  app.patch('/crm/:collection/:id', async (c) =>
    c.json(control.crm.update(crmCollection(c), idOf(c), await body(c))),
  )
  app.delete('/crm/:collection/:id', (c) => {
    control.crm.destroy(crmCollection(c), idOf(c))
    return c.body(null, 204)
  })
  app.post('/crm/:collection/:id/merge', async (c) => {
    const collection = crmCollection(c)
    if (collection !== 'people' && collection !== 'companies')
      throw new SandboxError(404, `no merges of ${collection}`)
    const ids = (await body(c)).looser_ids
    const loserIds = Array.isArray(ids) ? ids.map((id) => idParam(String(id))) : []
    if (loserIds.length === 0 || loserIds.some((id) => id === null))
      throw new SandboxError(422, 'expected {"looser_ids": [n, ...]}', { looser_ids: ['is invalid'] })
    return c.json(control.crm.merge(collection, idOf(c), loserIds as number[]))
  })
  app.put('/crm/:collection/:id/change_status', async (c) => {
    const collection = crmCollection(c)
    if (collection !== 'deals' && collection !== 'projects')
      throw new SandboxError(404, `no states of ${collection}`)
    return c.json(control.crm.changeStatus(collection, idOf(c), String((await body(c)).current_state ?? '')))
  })
  for (const child of ['tags', 'addrs'] as const) {
    const path = `/crm/:collection/:id/${child}`
    const contactCollection = (c: Context) => {
      const collection = crmCollection(c)
      if (collection !== 'people' && collection !== 'companies')
        throw new SandboxError(404, 'no addresses here')
      return collection
    }
    app.post(path, async (c) => {
      const fields = await body(c)
      const added =
        child === 'tags'
          ? control.crm.addTag(crmCollection(c), idOf(c), String(fields.name ?? ''))
          : control.crm.addAddress(contactCollection(c), idOf(c), fields)
      return c.json(added, 201)
    })
    app.patch(`${path}/:childId`, async (c) => {
      const fields = await body(c)
      if (child === 'tags')
        control.crm.renameTag(crmCollection(c), idOf(c), idOf(c, 'childId'), String(fields.name))
      else control.crm.updateAddress(contactCollection(c), idOf(c), idOf(c, 'childId'), fields)
      return c.body(null, 204)
    })
    app.delete(`${path}/:childId`, (c) => {
      if (child === 'tags') control.crm.removeTag(crmCollection(c), idOf(c), idOf(c, 'childId'))
      else control.crm.removeAddress(contactCollection(c), idOf(c), idOf(c, 'childId'))
      return c.body(null, 204)
    })
  }

  app.post('/reservation/contacts/:id/tags', async (c) => {
    const tagId = idParam(String((await body(c)).tag_id ?? ''))
    if (tagId === null) throw new SandboxError(422, 'expected {"tag_id": n}', { tag_id: ['is invalid'] })
    return c.json(control.reservation.tagContact(idOf(c), tagId), 201)
  })
  app.delete('/reservation/contacts/:id/tags/:tagId', (c) => {
    control.reservation.untagContact(idOf(c), idOf(c, 'tagId'))
    return c.body(null, 204)
  })
  app.get('/reservation/:collection', (c) => {
    const collection = reservationCollection(c)
    return c.json(truth(control.reservation.liveIds(collection), control.reservation.deletedIds(collection)))
  })
  app.get('/reservation/:collection/:id', (c) => {
    const record = control.reservation.get(reservationCollection(c), idOf(c))
    if (!record) throw new SandboxError(404, 'no such record')
    return c.json(record)
  })
  app.post('/reservation/:collection', async (c) =>
    c.json(control.reservation.create(reservationCollection(c), await body(c)), 201),
  )
  app.patch('/reservation/:collection/:id', async (c) =>
    c.json(control.reservation.update(reservationCollection(c), idOf(c), await body(c))),
  )
  app.delete('/reservation/:collection/:id', (c) => {
    control.reservation.destroy(reservationCollection(c), idOf(c))
    return c.body(null, 204)
  })
  return app
}
