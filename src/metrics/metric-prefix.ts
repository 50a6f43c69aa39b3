/** Every metric of crm-sync's own begins with this (Node's process metrics keep their usual names). */
export const PREFIX = 'crm_sync_'
