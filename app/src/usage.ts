// A month's usage: the member's own (`GET /api/usage`), the day and model figures the admin's
// report shares with it, and how they read: months and days named in words, every day of the
// month filled in, dollars and counts, how close someone is to a limit. Pure but for the call;
// tested in test/usage.
import { call } from './api';
import type { Schemas } from './wire';

/** One day of a month (UTC) with any usage; `date` is `YYYY-MM-DD`. */
export type DayUsage = Schemas['DayUsageView'];

/** One model's calls in a month. */
export type ModelUsage = Schemas['ModelUsageView'];

/** `GET /api/usage`: the member's own month, against the allowance that applies to them now
 *  (a cap absent or null: no limit). */
export type OwnUsage = Schemas['OwnUsageView'];

export const usage = {
  own: (month: string) => call<OwnUsage>('GET', `/api/usage?${new URLSearchParams({ month })}`),
};

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const pad = (n: number) => String(n).padStart(2, '0');

/** The month (UTC) `now` is in, as `YYYY-MM`. */
export function monthOf(now: Date): string {
  return `${now.getUTCFullYear()}-${pad(now.getUTCMonth() + 1)}`;
}

/** The last `count` months, this one first, as `YYYY-MM`: the month picker's choices. */
export function recentMonths(now: Date, count = 13): string[] {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return Array.from({ length: count }, (_, i) => {
    const d = new Date(Date.UTC(y, m - i, 1));
    return monthOf(d);
  });
}

function parts(month: string): [number, number] {
  const [y, m] = month.split('-').map(Number);
  return [y, m];
}

/** "November 2026". */
export function monthName(month: string): string {
  const [y, m] = parts(month);
  return `${MONTHS[m - 1]} ${y}`;
}

/** "5 November", for `2026-11-05`. */
export function dayName(date: string): string {
  const [, m, d] = date.split('-').map(Number);
  return `${d} ${MONTHS[m - 1]}`;
}

export function daysInMonth(month: string): number {
  const [y, m] = parts(month);
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** When the month's allowance renews: the first of the next month, "1 December". */
export function renewsOn(month: string): string {
  const [y, m] = parts(month);
  return dayName(monthOf(new Date(Date.UTC(y, m, 1))) + '-01');
}

/** Every day of the month, in order: the days the service named, the others at zero. */
export function fillMonth(month: string, days: DayUsage[]): DayUsage[] {
  const known = new Map(days.map((d) => [d.date, d]));
  return Array.from({ length: daysInMonth(month) }, (_, i) => {
    const date = `${month}-${pad(i + 1)}`;
    return known.get(date) ?? { date, questions: 0, inputTokens: 0, outputTokens: 0, usd: 0 };
  });
}

/** A count with its thousands grouped: "12,345". */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** US dollars to the cent; a spend under a cent is not shown as nothing. */
export function dollars(usd: number): string {
  if (usd > 0 && usd < 0.005) return 'under $0.01';
  return `$${usd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** "1 question", "12 questions". */
export function plural(n: number, word: string): string {
  return `${count(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** What a chart shows of each day. */
export type Series = 'questions' | 'usd';

export const SERIES: Record<Series, { label: string; value: (d: DayUsage) => number; say: (n: number) => string }> = {
  questions: { label: 'Questions', value: (d) => d.questions, say: (n) => plural(n, 'question') },
  usd: { label: 'Dollars', value: (d) => d.usd, say: dollars },
};

/** The chart in a sentence: "Questions per day in November 2026: 42 in all, most on 5 November
 *  (12 questions)." `days` is the whole month (fillMonth). */
export function chartSummary(month: string, days: DayUsage[], series: Series): string {
  const { label, value, say } = SERIES[series];
  const head = `${label} per day in ${monthName(month)}`;
  const total = days.reduce((sum, d) => sum + value(d), 0);
  if (total === 0) return `${head}: none.`;
  const top = days.reduce((best, d) => (value(d) > value(best) ? d : best));
  const all = series === 'usd' ? dollars(total) : count(total);
  return `${head}: ${all} in all, most on ${dayName(top.date)} (${say(value(top))}).`;
}

/** The top of a chart's scale: the smallest 1, 2 or 5 times a power of ten at or above `max`
 *  (1 for an empty chart). */
export function scaleTop(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max * (1 - 1e-9)) return step * power;
  return 10 * power;
}

/** A monthly allowance; absent or null is unlimited. */
export type Caps = Schemas['MemberCapsView'];

/** The allowance in words: "50 questions and $5.00", "Unlimited". */
export function capsWords(caps: Caps): string {
  const q = caps.questionCap != null ? plural(caps.questionCap, 'question') : null;
  const d = caps.capUsd != null ? dollars(caps.capUsd) : null;
  if (q && d) return `${q} and ${d}`;
  return q ?? d ?? 'Unlimited';
}

/** How close `used` is to the nearer of its limits: the share used (1 and more: reached) and
 *  in words, "80 % of $5.00"; null when nothing is limited. */
export function closeness(used: { questions: number; usd: number }, caps: Caps): { share: number; words: string } | null {
  const share = (n: number, cap: number) => (cap > 0 ? n / cap : 1);
  const limits: { share: number; of: string }[] = [];
  if (caps.questionCap != null) limits.push({ share: share(used.questions, caps.questionCap), of: plural(caps.questionCap, 'question') });
  if (caps.capUsd != null) limits.push({ share: share(used.usd, caps.capUsd), of: dollars(caps.capUsd) });
  if (limits.length === 0) return null;
  const near = limits.reduce((a, b) => (b.share > a.share ? b : a));
  return { share: near.share, words: `${Math.floor(near.share * 100)} % of ${near.of}` };
}

/** The member's month in sentences. This month: each figure against their allowance, and when
 *  it renews. An earlier month: what they used (the allowance now says nothing about it). */
export function ownWords(u: OwnUsage, thisMonth: string): string[] {
  if (u.month !== thisMonth) {
    return [`In ${monthName(u.month)} you asked ${plural(u.questions, 'question')} and spent ${dollars(u.usd)}.`];
  }
  const renews = renewsOn(u.month);
  return [
    u.questionCap != null
      ? `You have used ${count(u.questions)} of your ${plural(u.questionCap, 'question')} this month; they renew on ${renews}.`
      : `You have asked ${plural(u.questions, 'question')} this month, with no limit on questions.`,
    u.capUsd != null
      ? `You have spent ${dollars(u.usd)} of your ${dollars(u.capUsd)} this month; it renews on ${renews}.`
      : `You have spent ${dollars(u.usd)} this month, with no limit on spending.`,
  ];
}

/** "1,234 in, 56 out". */
export function tokensWords(input: number, output: number): string {
  return `${count(input)} in, ${count(output)} out`;
}
