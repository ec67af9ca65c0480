// A month day by day: a bar chart of the questions or the dollars of each day, drawn here in
// SVG, every day of the month on its axis and each bar titled with its day and figure; the
// chart is said in a sentence (its description for screen readers, and shown), and the same
// numbers are a table beneath it. Shared by the admin's Usage page and the member's own.
import { useState } from 'preact/hooks';

import { type DayUsage, SERIES, type Series, chartSummary, count, dayName, fillMonth, monthName, scaleTop } from '../usage';
import { FigureCells, FigureHeads } from './MonthUsage';

// The drawing's own units; it scales to the width it is given (style.css caps it).
const W = 400;
const H = 160;
const LEFT = 44;
const RIGHT = 4;
const TOP = 8;
const BOTTOM = 20;

/** A value on the scale, short: "20", "$20", "$0.05". */
function scaleLabel(series: Series, v: number): string {
  if (series === 'questions') return count(v);
  return `$${v < 1 ? v : count(v)}`;
}

export function DayChart({ id, month, days }: { id: string; month: string; days: DayUsage[] }) {
  const [series, setSeries] = useState<Series>('questions');
  const all = fillMonth(month, days);
  const { label, value, say } = SERIES[series];
  const top = scaleTop(Math.max(0, ...all.map(value)));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const step = plotW / all.length;
  const width = step * 0.7;
  const y = (v: number) => TOP + plotH - (v / top) * plotH;
  const middle = (i: number) => LEFT + step * i + step / 2;
  const labelled = [1, 5, 10, 15, 20, 25, all.length];
  return (
    <div class="day-chart">
      <fieldset class="series">
        <legend>Show</legend>
        {(Object.keys(SERIES) as Series[]).map((s) => (
          <label key={s}>
            <input type="radio" name={`${id}-series`} value={s} checked={series === s} onChange={() => setSeries(s)} />
            {SERIES[s].label}
          </label>
        ))}
      </fieldset>
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
        <title id={`${id}-title`}>{`${label} per day in ${monthName(month)}`}</title>
        <line class="grid" x1={LEFT} x2={W - RIGHT} y1={y(top)} y2={y(top)} />
        <text class="scale" x={LEFT - 4} y={y(top) + 4}>
          {scaleLabel(series, top)}
        </text>
        <text class="scale" x={LEFT - 4} y={y(0)}>
          {scaleLabel(series, 0)}
        </text>
        {all.map((d, i) =>
          value(d) > 0 ? (
            <rect key={d.date} class="bar" data-date={d.date} x={middle(i) - width / 2} y={y(value(d))} width={width} height={y(0) - y(value(d))}>
              <title>{`${dayName(d.date)}: ${say(value(d))}`}</title>
            </rect>
          ) : null,
        )}
        <line class="base" x1={LEFT} x2={W - RIGHT} y1={y(0)} y2={y(0)} />
        {labelled.map((day) => (
          <text key={day} class="day" x={middle(day - 1)} y={H - 6}>
            {day}
          </text>
        ))}
      </svg>
      <p class="hint" id={`${id}-summary`}>
        {chartSummary(month, all, series)}
      </p>
      <details>
        <summary>The numbers as a table</summary>
        <DayTable month={month} days={all} />
      </details>
    </div>
  );
}

/** Every day of the month with its figures, and the month's total. */
function DayTable({ month, days }: { month: string; days: DayUsage[] }) {
  const sum = (f: (d: DayUsage) => number) => days.reduce((n, d) => n + f(d), 0);
  return (
    <table class="stack numbers">
      <caption>Usage per day in {monthName(month)}</caption>
      <thead>
        <FigureHeads name="Day" countLabel="Questions" />
      </thead>
      <tbody>
        {days.map((d) => (
          <tr key={d.date}>
            <th scope="row">{dayName(d.date)}</th>
            <FigureCells countLabel="Questions" n={d.questions} input={d.inputTokens} output={d.outputTokens} usd={d.usd} />
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th scope="row">Total</th>
          <FigureCells
            countLabel="Questions"
            n={sum((d) => d.questions)}
            input={sum((d) => d.inputTokens)}
            output={sum((d) => d.outputTokens)}
            usd={sum((d) => d.usd)}
          />
        </tr>
      </tfoot>
    </table>
  );
}
