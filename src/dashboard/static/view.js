// What the queue page remembers between refreshes: each table's page offset and total, the job in
// the inspector, and how far the server's clock is from this browser's.

/** Rows per table page. */
export const PAGE = 10;
/** The job tables, in page order. */
export const STATES = ['scheduled', 'waiting-children', 'active', 'dead', 'completed', 'cancelled'];

export const view = {
  offsets: { scheduled: 0, 'waiting-children': 0, active: 0, dead: 0, completed: 0, cancelled: 0 },
  totals: { scheduled: 0, 'waiting-children': 0, active: 0, dead: 0, completed: 0, cancelled: 0 },
  /** The id shown in the inspector, or null. */
  inspected: null,
  /** Server clock minus this browser's clock, from the last overview. */
  skew: 0,
};
