/** What `add()` and `addBulk()` resolve to, one per job. */
/** What add resolves to. */
export interface AddResult {
  id: string;
  /**
   * When the job is due (for an existing id: the existing job's due time; for the id of a job
   * that has already completed: when it completed, as `completedAt`).
   */
  runAt: Date;
  /**
   * False when a job with this id already existed or recently completed; nothing was written then.
   * With `onExists: 'replace'`, an id whose job completed (and is remembered) is added again: true.
   */
  created: boolean;
  /**
   * Set when a job with this id completed recently (workers remember completed ids for
   * `rememberCompleted`, default 5 min, or `keepCompleted`) and `onExists` is 'keep': the add was
   * a repeat, so nothing was written.
   */
  completedAt?: Date;
  /** With `onExists: 'replace'`: whether the waiting job was replaced (runAt is then its new due time). */
  replaced?: boolean;
  /**
   * When the job exists but is not waiting (nothing was written): 'active' (running; runAt is its
   * lease deadline), 'dead' (when it died), 'completed' or 'cancelled' (kept for a while; when).
   */
  state?: 'active' | 'dead' | 'completed' | 'cancelled';
  /** With `durability`: how many replicas acknowledged holding the job (at least the number asked). */
  replicated?: number;
}
