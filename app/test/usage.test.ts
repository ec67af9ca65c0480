// How a month's usage reads: the months to pick, every day filled in, dollars and counts, the
// chart in a sentence, its scale, how close someone is to a limit, and a member's own month.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  type DayUsage,
  capsWords,
  chartSummary,
  closeness,
  dayName,
  dollars,
  fillMonth,
  monthName,
  ownWords,
  recentMonths,
  renewsOn,
  scaleTop,
  tokensWords,
} from '../src/usage';

const day = (date: string, questions: number, usd = 0): DayUsage => ({ date, questions, inputTokens: questions * 10, outputTokens: questions * 5, usd });

test('the picker offers the last 13 months, this one first, across the new year, in UTC', () => {
  const months = recentMonths(new Date('2026-01-31T23:30:00Z'));
  assert.equal(months.length, 13);
  assert.deepEqual(months.slice(0, 3), ['2026-01', '2025-12', '2025-11']);
  assert.equal(months[12], '2025-01');
  // Late on the 31st in a zone behind UTC is already the next month in UTC.
  assert.equal(recentMonths(new Date('2026-03-01T00:10:00Z'))[0], '2026-03');
});

test('months and days are named in words, and a month renews on the first of the next', () => {
  assert.equal(monthName('2026-11'), 'November 2026');
  assert.equal(dayName('2026-11-05'), '5 November');
  assert.equal(renewsOn('2026-11'), '1 December');
  assert.equal(renewsOn('2026-12'), '1 January');
});

test('every day of the month is filled in, the days the service named kept as they are', () => {
  const days = fillMonth('2026-11', [day('2026-11-05', 3, 1.5), day('2026-11-30', 1)]);
  assert.equal(days.length, 30);
  assert.deepEqual(days[0], { date: '2026-11-01', questions: 0, inputTokens: 0, outputTokens: 0, usd: 0 });
  assert.deepEqual(days[4], day('2026-11-05', 3, 1.5));
  assert.equal(days[29].questions, 1);
  assert.equal(fillMonth('2028-02', []).length, 29);
  assert.equal(fillMonth('2026-02', []).length, 28);
  assert.equal(fillMonth('2026-12', []).at(-1)?.date, '2026-12-31');
});

test('dollars are shown to the cent, and a spend under a cent is not shown as nothing', () => {
  assert.equal(dollars(0), '$0.00');
  assert.equal(dollars(12.5), '$12.50');
  assert.equal(dollars(1234.567), '$1,234.57');
  assert.equal(dollars(0.004), 'under $0.01');
  assert.equal(dollars(0.005), '$0.01');
  assert.equal(tokensWords(12345, 6), '12,345 in, 6 out');
});

test('the chart says its total and its busiest day, or that the month had none', () => {
  const month = fillMonth('2026-11', [day('2026-11-02', 4, 0.5), day('2026-11-05', 12, 2), day('2026-11-09', 12, 3)]);
  assert.equal(chartSummary('2026-11', month, 'questions'), 'Questions per day in November 2026: 28 in all, most on 5 November (12 questions).');
  assert.equal(chartSummary('2026-11', month, 'usd'), 'Dollars per day in November 2026: $5.50 in all, most on 9 November ($3.00).');
  assert.equal(chartSummary('2026-10', fillMonth('2026-10', []), 'questions'), 'Questions per day in October 2026: none.');
  assert.equal(chartSummary('2026-11', fillMonth('2026-11', [day('2026-11-03', 1)]), 'questions'), 'Questions per day in November 2026: 1 in all, most on 3 November (1 question).');
});

test("the chart's scale tops at 1, 2 or 5 times a power of ten at or above the most", () => {
  assert.deepEqual([0, 1, 3, 7, 10, 12, 42, 0.3, 0.0004].map(scaleTop), [1, 1, 5, 10, 10, 20, 50, 0.5, 0.0005]);
});

test('an allowance reads in words, and how close one is goes by the nearer limit', () => {
  assert.equal(capsWords({}), 'Unlimited');
  assert.equal(capsWords({ questionCap: 50, capUsd: null }), '50 questions');
  assert.equal(capsWords({ questionCap: 1, capUsd: 5 }), '1 question and $5.00');
  assert.equal(closeness({ questions: 3, usd: 1 }, { questionCap: null }), null);
  assert.deepEqual(closeness({ questions: 10, usd: 4 }, { questionCap: 50, capUsd: 5 }), { share: 0.8, words: '80 % of $5.00' });
  assert.deepEqual(closeness({ questions: 45, usd: 1 }, { questionCap: 50, capUsd: 5 }), { share: 0.9, words: '90 % of 50 questions' });
  assert.deepEqual(closeness({ questions: 0, usd: 0 }, { questionCap: 0 }), { share: 1, words: '100 % of 0 questions' });
  assert.equal(closeness({ questions: 6, usd: 0 }, { questionCap: 5 })?.words, '120 % of 5 questions');
});

test("a member's own month says each figure against their allowance and when it renews", () => {
  const own = { month: '2026-11', questions: 12, usd: 1.2, inputTokens: 0, outputTokens: 0, days: [], models: [] };
  assert.deepEqual(ownWords({ ...own, questionCap: 50, capUsd: 5 }, '2026-11'), [
    'You have used 12 of your 50 questions this month; they renew on 1 December.',
    'You have spent $1.20 of your $5.00 this month; it renews on 1 December.',
  ]);
  assert.deepEqual(ownWords({ ...own, questionCap: null }, '2026-11'), [
    'You have asked 12 questions this month, with no limit on questions.',
    'You have spent $1.20 this month, with no limit on spending.',
  ]);
  // An earlier month is what was used; today's allowance says nothing about it.
  assert.deepEqual(ownWords({ ...own, questions: 1, month: '2026-10', questionCap: 50 }, '2026-11'), [
    'In October 2026 you asked 1 question and spent $1.20.',
  ]);
});
