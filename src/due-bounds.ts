/**
 * The due times every script accepts (src/scripts/includes/args.lua checks the same bounds): a
 * time before 2000 is almost always epoch seconds passed as ms, and one past 9999 no date can show.
 */

/** The earliest due time a script accepts: 2000-01-01, epoch ms. */
export const MIN_RUN_AT = Date.UTC(2000, 0, 1);
/** The latest due time a script accepts: the end of 9999-12-31, epoch ms. */
export const MAX_RUN_AT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
