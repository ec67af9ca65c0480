// A limit reached, in words: how long to wait, said the way a person would ("about an hour"),
// counted down by the view. Pure; tested in test/limits.

/** How long `secs` is, in words: seconds under a minute and a half (so that a countdown shows
 *  them go), then minutes, then hours. */
export function waitWords(secs: number): string {
  const s = Math.max(0, Math.ceil(secs));
  if (s >= 50 * 60 && s < 90 * 60) return 'about an hour';
  if (s >= 90 * 60) return `about ${Math.round(s / 3600)} hours`;
  if (s >= 90) return `about ${Math.round(s / 60)} minutes`;
  return s === 1 ? '1 second' : `${s} seconds`;
}

/** What to say while the rate limit holds, `left` seconds before it lifts. `creating`: the
 *  refused request started a new conversation (the limit on new conversations). */
export function rateLimitWords(left: number, creating: boolean): string {
  if (left <= 0) return creating ? 'You can start a new conversation again now.' : 'You can send again now.';
  const wait = waitWords(left);
  return creating
    ? `You have started the most conversations allowed for now. You can start a new one in ${wait}; your existing conversations still work.`
    : `You have sent the most messages allowed for now. You can send again in ${wait}.`;
}
