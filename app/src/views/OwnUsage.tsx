// The member's own usage (/usage), a month at a time: their questions and dollars against the
// allowance that applies to them, in words and as meters, the month day by day, and the split
// by model. Anyone signed in sees their own; nobody sees another's here.
import { useEffect, useState } from 'preact/hooks';

import { type OwnUsage as Own, monthName, monthOf, ownWords, tokensWords, usage } from '../usage';
import { DayChart } from './DayChart';
import { ModelTable, MonthPicker } from './MonthUsage';
import { NoticeLine, useNotice } from './admin/common';

export function OwnUsage() {
  const [month, setMonth] = useState(monthOf(new Date()));
  const [own, setOwn] = useState<Own | null>(null);
  const { notice, run } = useNotice();
  useEffect(() => {
    let stale = false;
    void run(async () => {
      const u = await usage.own(month);
      if (!stale) setOwn(u);
    });
    return () => {
      stale = true;
    };
  }, [month]);
  const thisMonth = monthOf(new Date());
  return (
    <section class="own-usage" aria-labelledby="own-usage-title">
      <h1 id="own-usage-title">Your usage</h1>
      <p class="hint">What you asked in this organisation, and what it cost. Only you and the organisation's admins see it.</p>
      <MonthPicker id="own-month" month={month} pick={setMonth} />
      <NoticeLine notice={notice} />
      {own && (
        <>
          <div class="standing">
            {ownWords(own, thisMonth).map((sentence) => (
              <p key={sentence}>{sentence}</p>
            ))}
            {own.month === thisMonth && own.questionCap != null && (
              <div class="field">
                <label for="own-questions-meter">Questions used</label>
                <meter id="own-questions-meter" min={0} max={Math.max(own.questionCap, 1)} high={own.questionCap * 0.8} value={own.questions} />
              </div>
            )}
            {own.month === thisMonth && own.capUsd != null && (
              <div class="field">
                <label for="own-usd-meter">Spending used</label>
                <meter id="own-usd-meter" min={0} max={Math.max(own.capUsd, 0.01)} high={own.capUsd * 0.8} value={own.usd} />
              </div>
            )}
            <p class="hint">Tokens: {tokensWords(own.inputTokens, own.outputTokens)}.</p>
          </div>
          <h2>Day by day</h2>
          <DayChart id="own-days" month={own.month} days={own.days} />
          <h2>By model</h2>
          <ModelTable month={own.month} models={own.models} />
        </>
      )}
      {own === null && !notice && <p class="hint">Loading {monthName(month)}…</p>}
    </section>
  );
}
