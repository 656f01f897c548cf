// How long an upload (or a download) may take: what the plan shows (changes.ts) and what apply holds it to (apply.ts).

/**
 * Uploads are budgeted by their size: a floor (sudo, mkdir, the rename, a slow start) plus the bytes at
 * 1 MiB/s. 1 MiB/s (8 Mbit/s) is slower than any LAN and than most VPN or jump-host links, so the budget
 * stops an upload that stalled, not one that is slow but moving: the 70 MiB images tarball of k3s gets
 * 3 min 10 s, a 1 GiB snapshot 19 min. Progress events say how far a long one has got.
 */
export const UPLOAD_FLOOR_MS = 120_000;
export const UPLOAD_BYTES_PER_SECOND = 1024 * 1024;

export function uploadBudgetMs(bytes: number): number {
  return UPLOAD_FLOOR_MS + Math.ceil((bytes / UPLOAD_BYTES_PER_SECOND) * 1000);
}
