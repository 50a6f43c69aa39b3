// Settings that are not variables: upstream facts and tuning an operator never needs. A variable
// named in REMOVED_VARIABLES that is still set gets one warning at start, never a refusal.
export const TUNING = {
  // How far before the start of the previous successful sweep an incremental sweep reaches back: room
  // for whole-second timestamps, clock skew between the upstream and PostgreSQL, and slow commits.
  lookbackSeconds: 300,
  // Both upstreams count their 50 requests in windows of 10 s (the reservation service's are assumed).
  rateWindowSeconds: 10,
  // The CRM's document says 500 a page, its public clients use 250: 500 is asked for, and a shorter page
  // teaches the walk the real size (complete walks are planned at 250).
  crmPageSize: 500,
  // The reservation service's largest page is not published: the CRM's practical 250 is asked for, and
  // a shorter page teaches the walk the real size.
  reservationPageSize: 250,
  // A walk that reads more pages than this stops with an error rather than loop on a broken upstream.
  maxPages: 10_000,
  // A record that changes again within this many seconds is refreshed once per slot of that length.
  refreshCoalesceSeconds: 5,
  // The share of each upstream's budget that incremental sweeps may spend on average verifying what
  // their newest pages cannot show: counts, and complete walks of resources without a count route.
  verificationBudgetPercent: 50,
}

/** Variables no longer read, and what stands in their place: one warning each when set, never a refusal. */
export const REMOVED_VARIABLES: Readonly<Record<string, string>> = {
  SYNC_LOOKBACK_SECONDS: 'incremental sweeps read back 300 s',
  CRM_RATE_WINDOW_SECONDS: 'the CRM counts CRM_RATE_LIMIT requests per 10 s',
  RESERVATION_RATE_WINDOW_SECONDS: 'the reservation service counts RESERVATION_RATE_LIMIT requests per 10 s',
  RESERVATION_PAGE_SIZE: 'pages of 250 are asked for; a shorter page teaches the walk the real size',
  CRM_PAGE_SIZE: 'pages of 500 are asked for; a shorter page teaches the walk the real size',
  UPSTREAM_MAX_PAGES: 'a walk stops at 10,000 pages',
  REFRESH_COALESCE_SECONDS: 'a changing record is refreshed at most once per 5 s',
  RECONCILE_BUDGET_PERCENT: 'verification spends at most half of each budget',
  RESERVATION_ORDER_SPELLING: 'the reservation client learns the spelling of order from the pages it gets',
}
