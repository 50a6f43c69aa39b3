// Hooks over the API and deliveries to a receiver: the four shapes, includes, sub-object changes,
// destroys and failures. Deliveries are awaited with drainDeliveries(), never with sleeps.
import { describe, expect, it } from 'vitest'
import { addHook, harness, receiver } from './helpers.ts'

describe('hooks', () => {
  it('creates, lists (model capitalised, with verified/failed/failed_at) and deletes hooks', async () => {
    const h = await harness()
    const target = await receiver()
    const created = await h.crm.send('POST', 'hooks', {
      hook: { model: 'person', event: 'update', target_url: `${target.url}/person`, object_type: 'lean' },
    })
    expect(created.status).toBe(201)
    const index = await h.crm.get('hooks.json')
    expect(index.body).toEqual([
      {
        hook: expect.objectContaining({
          id: created.body.hook.id,
          model: 'Person',
          event: 'update',
          object_type: 'lean',
          hook_type: 'url',
          verified: false,
          failed: 0,
          failed_at: null,
        }),
      },
    ])
    expect((await h.crm.send('DELETE', `hooks/${created.body.hook.id}`, {})).status).toBe(200)
    expect((await h.crm.get('hooks')).body).toEqual([])
    expect((await h.crm.send('DELETE', `hooks/${created.body.hook.id}`, {})).status).toBe(404)
  })

  it('refuses invalid hooks with 422', async () => {
    const h = await harness()
    const invalid = await h.crm.send('POST', 'hooks', {
      hook: { model: 'invoice', event: 'update', target_url: 'not a url', object_type: 'fancy' },
    })
    expect(invalid.status).toBe(422)
    expect(Object.keys(invalid.body).sort()).toEqual(['model', 'object_type', 'target_url'])
    const incomplete = await h.crm.send('POST', 'hooks', {
      model: 'person',
      event: 'create',
      object_type: 'lean',
    })
    expect(incomplete.body).toEqual({ target_url: ["can't be blank"] })
  })
})

describe('deliveries', () => {
  it('sends each of the four object types in its own shape', async () => {
    const h = await harness()
    const target = await receiver()
    for (const objectType of ['lean', 'nested', 'api', 'flat']) {
      await addHook(h, {
        model: 'person',
        event: 'create',
        target_url: `${target.url}/${objectType}`,
        object_type: objectType,
        includes: 'tags,addrs',
      })
    }
    const person = h.sandbox.control.crm.create('people', {
      name: 'Mustermann',
      first_name: 'Maxi',
      tags_attributes: { '0': { name: 'VIP' } },
      addrs_attributes: { '0': { street: 'Markt 1', city: 'Leipzig', country: 'DE' } },
      tels_attributes: { '0': { name: '0341 123456', atype: 'office' } },
    })
    await h.sandbox.control.drainDeliveries()
    const by = (path: string) => target.received.find((delivery) => delivery.path === path)?.body
    expect(by('/lean')).toEqual({ model: 'person', event: 'create', record_id: person.id })
    const nested = by('/nested')
    expect(nested).toMatchObject({
      model: 'person',
      event: 'create',
      record: { id: person.id, name: 'Mustermann' },
    })
    expect(nested.record.tags[0].name).toBe('VIP')
    expect(nested.record.addrs[0].city).toBe('Leipzig')
    expect(nested.record).not.toHaveProperty('tels')
    const api = by('/api')
    expect(Object.keys(api)).toEqual(['person'])
    expect(api.person.addrs[0].country_name).toBe('Deutschland')
    const flat = by('/flat')
    expect(flat).toMatchObject({
      id: person.id,
      first_name: 'Maxi',
      last_name: 'Mustermann',
      office_phone: '0341 123456',
    })
    expect(flat).not.toHaveProperty('model')
    expect(Object.values(flat).every((value) => value === null || typeof value !== 'object')).toBe(true)
    expect(h.sandbox.control.counters().deliveries).toMatchObject({ queued: 4, succeeded: 4, failed: 0 })
  })

  it('delivers only to hooks of the changed model and event, and also for API changes', async () => {
    const h = await harness()
    const target = await receiver()
    await addHook(h, {
      model: 'deal',
      event: 'update',
      target_url: `${target.url}/deal`,
      object_type: 'lean',
    })
    await addHook(h, {
      model: 'Company',
      event: 'create',
      target_url: `${target.url}/company`,
      object_type: 'lean',
    })
    const company = await h.crm.send('POST', 'companies', { company: { name: 'Elbtal GmbH' } })
    const deal = await h.crm.send('POST', 'deals', {
      deal: {
        name: 'Rahmenvertrag',
        value: '10',
        value_type: 'Total',
        value_count: 1,
        target_date: '2024-07-01',
      },
    })
    await h.crm.send('PUT', `deals/${deal.body.deal.id}`, { deal: { name: 'Rahmenvertrag 2' } })
    await h.sandbox.control.drainDeliveries()
    expect(target.received).toEqual([
      { path: '/company', body: { model: 'company', event: 'create', record_id: company.body.company.id } },
      { path: '/deal', body: { model: 'deal', event: 'update', record_id: deal.body.deal.id } },
    ])
  })

  it("bumps the parent's updated_at and sends its update when a tag or address changes, if set to", async () => {
    // the kinder variant, named: by default a sub-object change leaves its parent alone
    const h = await harness({ behaviour: { childChangesTouchParent: true } })
    const target = await receiver()
    await addHook(h, {
      model: 'person',
      event: 'update',
      target_url: target.url,
      object_type: 'nested',
      includes: 'tags',
    })
    const person = h.sandbox.control.crm.create('people', { name: 'Mustermann' })
    h.clock.advance(3_000)
    const tag = h.sandbox.control.crm.addTag('people', person.id, 'Kunde')
    h.clock.advance(3_000)
    const addr = h.sandbox.control.crm.addAddress('people', person.id, { street: 'Markt 1' })
    h.clock.advance(3_000)
    h.sandbox.control.crm.removeTag('people', person.id, tag.id)
    await h.sandbox.control.drainDeliveries()
    const updates = target.received.map((delivery) => delivery.body.record)
    expect(updates.map((record) => record.tags.map((t: { name: string }) => t.name))).toEqual([
      ['Kunde'],
      ['Kunde'],
      [],
    ])
    expect(updates.map((record) => record.updated_at)).toEqual([
      '2024-06-03T09:00:03.000+01:00',
      '2024-06-03T09:00:06.000+01:00',
      '2024-06-03T09:00:09.000+01:00',
    ])
    expect(h.sandbox.control.crm.get('people', person.id)?.addrs).toEqual([
      expect.objectContaining({ id: addr.id }),
    ])
  })

  it('sends the avatar and connections a hook includes, and updates for their changes if set to', async () => {
    const h = await harness({ behaviour: { childChangesTouchParent: true } })
    const target = await receiver()
    await addHook(h, {
      model: 'company',
      event: 'update',
      target_url: target.url,
      object_type: 'nested',
      includes: 'avatar,connections',
    })
    const { crm } = h.sandbox.control
    const company = crm.create('companies', { name: 'Kranich AG' })
    h.clock.advance(3_000)
    const avatar = crm.setAvatar('companies', company.id, { filename: 'logo.png' })
    h.clock.advance(3_000)
    crm.addConnection('companies', company.id, { network: 'linkedin', url: 'https://linkedin.example/k' })
    await h.sandbox.control.drainDeliveries()
    expect(target.received.map((delivery) => delivery.body.record)).toEqual([
      expect.objectContaining({ updated_at: '2024-06-03T09:00:03.000+01:00', avatar, connections: [] }),
      expect.objectContaining({
        updated_at: '2024-06-03T09:00:06.000+01:00',
        avatar,
        connections: [{ network: 'linkedin', url: 'https://linkedin.example/k' }],
      }),
    ])
  })

  it('leaves the parent alone when a sub-object changes, by default', async () => {
    const h = await harness()
    const target = await receiver()
    await addHook(h, { model: 'person', event: 'update', target_url: target.url, object_type: 'lean' })
    const person = h.sandbox.control.crm.create('people', { name: 'Mustermann' })
    h.clock.advance(3_000)
    h.sandbox.control.crm.addTag('people', person.id, 'Kunde')
    h.sandbox.control.crm.setAvatar('people', person.id, { filename: 'maxi.jpg' })
    h.sandbox.control.crm.addConnection('people', person.id, { network: 'xing', url: 'https://x.example' })
    h.sandbox.control.crm.updateConnection('people', person.id, 0, { url: 'https://x.example/2' })
    h.sandbox.control.crm.removeConnection('people', person.id, 0)
    await h.sandbox.control.drainDeliveries()
    expect(target.received).toEqual([])
    expect(h.sandbox.control.crm.get('people', person.id)?.updated_at).toBe(person.updated_at)
  })

  it('sends destroys in every shape, with the record as it was', async () => {
    const h = await harness()
    const target = await receiver()
    for (const objectType of ['lean', 'nested', 'api']) {
      await addHook(h, {
        model: 'project',
        event: 'destroy',
        target_url: `${target.url}/${objectType}`,
        object_type: objectType,
      })
    }
    const project = h.sandbox.control.crm.create('projects', { name: 'Relaunch', target_date: '2024-09-30' })
    await h.crm.send('DELETE', `projects/${project.id}`, {})
    await h.sandbox.control.drainDeliveries()
    const bodies = target.received.map((delivery) => delivery.body)
    expect(bodies).toEqual([
      { model: 'project', event: 'destroy', record_id: project.id },
      {
        model: 'project',
        event: 'destroy',
        record: expect.objectContaining({ id: project.id, name: 'Relaunch' }),
      },
      { project: expect.objectContaining({ id: project.id }) },
    ])
    expect(h.sandbox.control.crm.deletedIds('projects')).toEqual([project.id])
  })

  it('detaches what referred to a destroyed record, sending their updates if set to, and removes its tasks', async () => {
    // detaching is a change of the kind sub-object changes are: updates are sent only in the kinder variant
    const h = await harness({ behaviour: { childChangesTouchParent: true } })
    const target = await receiver()
    for (const model of ['person', 'deal']) {
      await addHook(h, { model, event: 'update', target_url: `${target.url}/${model}`, object_type: 'lean' })
    }
    const { crm } = h.sandbox.control
    const company = crm.create('companies', { name: 'Kranich AG' })
    const person = crm.create('people', {
      name: 'Angestellt',
      positions_attributes: [{ company_id: company.id, name: 'Einkauf' }],
    })
    const deal = crm.create('deals', {
      name: 'Lizenzen',
      value: 10,
      value_type: 'Total',
      value_count: 1,
      target_date: '2024-07-01',
      company_id: company.id,
      person_ids_set: `${person.id}`,
    })
    const task = crm.create('tasks', {
      name: 'Anrufen',
      attachable_type: 'Company',
      attachable_id: company.id,
    })
    expect(crm.get('companies', company.id)?.positions).toHaveLength(1)
    h.clock.advance(2_000)
    crm.destroy('companies', company.id)
    await h.sandbox.control.drainDeliveries()
    expect(target.received.map((d) => [d.path, d.body.record_id])).toEqual([
      ['/person', person.id],
      ['/deal', deal.id],
    ])
    expect(crm.get('people', person.id)?.positions).toEqual([])
    expect(crm.get('deals', deal.id)).toMatchObject({ company_id: null, company: null })
    expect(crm.deletedIds('tasks')).toEqual([task.id])
    crm.destroy('people', person.id)
    expect(crm.get('deals', deal.id)?.people).toEqual([])
  })

  it("counts failed deliveries into the hook's failed and failed_at, and verifies it on success", async () => {
    const h = await harness()
    let answer = 500
    const target = await receiver(() => answer)
    const hook = await addHook(h, {
      model: 'company',
      event: 'create',
      target_url: target.url,
      object_type: 'lean',
    })
    h.sandbox.control.crm.create('companies', { name: 'Eins' })
    h.sandbox.control.crm.create('companies', { name: 'Zwei' })
    await h.sandbox.control.drainDeliveries()
    let shown = (await h.crm.get('hooks')).body[0].hook
    expect(shown).toMatchObject({
      id: hook.id,
      failed: 2,
      failed_at: '2024-06-03T09:00:00.000+01:00',
      verified: false,
    })
    answer = 204
    h.sandbox.control.crm.create('companies', { name: 'Drei' })
    await h.sandbox.control.drainDeliveries()
    shown = (await h.crm.get('hooks')).body[0].hook
    expect(shown).toMatchObject({ failed: 2, verified: true })
    expect(h.sandbox.control.counters().deliveries).toMatchObject({ queued: 3, failed: 2, succeeded: 1 })
  })

  it('counts a receiver that refuses connections as failed', async () => {
    const h = await harness()
    const target = await receiver()
    await target.stop()
    await addHook(h, { model: 'person', event: 'create', target_url: target.url, object_type: 'lean' })
    h.sandbox.control.crm.create('people', { name: 'Niemand' })
    await h.sandbox.control.drainDeliveries()
    expect((await h.crm.get('hooks')).body[0].hook.failed).toBe(1)
  })
})
