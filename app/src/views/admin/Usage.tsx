// The organisation's usage (/admin/usage), a month at a time: its totals against the limits,
// the month day by day, the members who used the most and how close each is to their
// allowance, the split by model, downloads of the month as CSV, and the limits themselves.
import { useEffect, useRef, useState } from 'preact/hooks';

import { type Limits, type Usage, admin, memberName, usageExportUrl } from '../../admin';
import { capsWords, closeness, count, dollars, monthName, monthOf, tokensWords } from '../../usage';
import { DayChart } from '../DayChart';
import { ModelTable, MonthPicker } from '../MonthUsage';
import { NoticeLine, useNotice } from './common';

type LimitFields = Record<keyof Limits, string>;

const fields = (l: Limits): LimitFields => ({
  monthlyQueryQuota: l.monthlyQueryQuota?.toString() ?? '',
  costCapUsd: l.costCapUsd?.toString() ?? '',
  memberQuestionCap: l.memberQuestionCap?.toString() ?? '',
  memberCapUsd: l.memberCapUsd?.toString() ?? '',
});

const limit = (text: string) => (text.trim() ? Number(text) : null);

export function UsagePage() {
  const [month, setMonth] = useState(monthOf(new Date()));
  const [usage, setUsage] = useState<Usage | null>(null);
  const [form, setForm] = useState<LimitFields | null>(null);
  const { notice, busy, run } = useNotice();
  // The form shows the limits as first read, then as saved; a month picked does not reset it.
  const filled = useRef(false);
  const show = (u: Usage) => {
    setUsage(u);
    if (!filled.current) setForm(fields(u));
    filled.current = true;
  };
  useEffect(() => {
    let stale = false;
    void run(async () => {
      const u = await admin.usage(month);
      if (!stale) show(u);
    });
    return () => {
      stale = true;
    };
  }, [month]);
  const save = (f: LimitFields) =>
    run(async () => {
      const saved = await admin.setLimits({
        monthlyQueryQuota: limit(f.monthlyQueryQuota),
        costCapUsd: limit(f.costCapUsd),
        memberQuestionCap: limit(f.memberQuestionCap),
        memberCapUsd: limit(f.memberCapUsd),
      });
      setForm(fields(saved));
      setUsage(await admin.usage(month));
      return 'The limits are saved; they apply from the next question.';
    });
  // Each field waits for the limits as read: what was typed before would be overwritten.
  const field = (key: keyof Limits, id: string, label: string, step: string) => (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        type="number"
        min="0"
        step={step}
        value={form?.[key] ?? ''}
        disabled={!form}
        onInput={(e) => setForm((f) => f && { ...f, [key]: (e.target as HTMLInputElement).value })}
        aria-describedby="limits-hint"
      />
    </div>
  );
  const name = usage && monthName(usage.month);
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      <MonthPicker id="usage-month" month={month} pick={setMonth} />
      {usage && (
        <>
          <dl class="usage">
            <dt>Questions</dt>
            <dd>
              {count(usage.queries)}
              {usage.monthlyQueryQuota != null ? ` of ${count(usage.monthlyQueryQuota)}` : ' (no quota)'}
            </dd>
            <dt>Spend</dt>
            <dd>
              {dollars(usage.monthToDateUsd)}
              {usage.costCapUsd != null ? ` of ${dollars(usage.costCapUsd)}` : ' (no cap)'}
            </dd>
            <dt>Tokens</dt>
            <dd>{tokensWords(usage.inputTokens, usage.outputTokens)}</dd>
            <dt>Members who asked</dt>
            <dd>{count(usage.activeMembers)}</dd>
            <dt>Each member's allowance</dt>
            <dd>{memberDefault(usage)}</dd>
          </dl>
          <h3>Day by day</h3>
          <DayChart id="org-days" month={usage.month} days={usage.days} />
          <h3>Members who used the most</h3>
          <TopMembers usage={usage} />
          <h3>By model</h3>
          <ModelTable month={usage.month} models={usage.models} />
          <h3>Download</h3>
          <div class="row">
            <a class="button" href={usageExportUrl(usage.month, 'day')} download={`usage-${usage.month}.csv`}>
              Download usage (CSV, per member per day)
            </a>
            <a class="button" href={usageExportUrl(usage.month, 'model')} download={`usage-${usage.month}-by-model.csv`}>
              Download usage (CSV, per member per model)
            </a>
          </div>
          <p class="hint">The downloads hold {name}, every member who used anything.</p>
        </>
      )}
      <h3>Limits</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (form) void save(form);
        }}
      >
        {field('monthlyQueryQuota', 'quota', 'Monthly question quota', '1')}
        {field('costCapUsd', 'cap', 'Monthly cost cap (US dollars)', '0.01')}
        {field('memberQuestionCap', 'member-questions', 'Questions each member may ask a month', '1')}
        {field('memberCapUsd', 'member-usd', 'US dollars each member may spend a month', '0.01')}
        <p id="limits-hint" class="hint">
          Leave a limit empty for none. A member's own allowance, set in Members, takes the place of theirs.
        </p>
        <button type="submit" disabled={busy || !form}>
          Save limits
        </button>
      </form>
      <NoticeLine notice={notice} />
    </section>
  );
}

/** Each member's allowance unless set for them, in words. */
function memberDefault(usage: Usage): string {
  const words = capsWords({ questionCap: usage.memberQuestionCap, capUsd: usage.memberCapUsd });
  return `${words === 'Unlimited' ? words : `${words} a month`}, unless set for the member`;
}

/** The members who used the most. How close each is to their allowance is shown for this month
 *  only: the allowance is the one that applies now, which says nothing of a month gone. */
function TopMembers({ usage }: { usage: Usage }) {
  const name = monthName(usage.month);
  const current = usage.month === monthOf(new Date());
  if (usage.members.length === 0) return <p class="hint">Nobody asked anything in {name}.</p>;
  return (
    <>
      <table class="stack">
        <caption class="visually-hidden">The members who used the most in {name}, most dollars first</caption>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Questions</th>
            <th scope="col">Dollars</th>
            <th scope="col">Tokens</th>
            <th scope="col">{current ? 'Allowance' : 'Allowance now'}</th>
            {current && <th scope="col">How close</th>}
          </tr>
        </thead>
        <tbody>
          {usage.members.map((m) => {
            const near = closeness(m, m);
            return (
              <tr key={m.userId}>
                <th scope="row">
                  {memberName(m)}
                  {m.removed && <span class="badge"> (removed)</span>}
                </th>
                <td data-label="Questions">{count(m.questions)}</td>
                <td data-label="Dollars">{dollars(m.usd)}</td>
                <td data-label="Tokens">{tokensWords(m.inputTokens, m.outputTokens)}</td>
                <td data-label={current ? 'Allowance' : 'Allowance now'}>{capsWords(m)}</td>
                {current && (
                  <td data-label="How close">
                    {near ? (
                      <span class="near">
                        <meter min={0} max={1} low={0.8} high={0.95} optimum={0} value={Math.min(near.share, 1)} aria-hidden="true" />
                        {near.words}
                      </span>
                    ) : (
                      'No limit'
                    )}
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      {usage.activeMembers > usage.members.length && (
        <p class="hint">
          {count(usage.activeMembers)} members asked anything; the {usage.members.length} who used the most are shown, and the
          downloads hold everyone.
        </p>
      )}
    </>
  );
}
