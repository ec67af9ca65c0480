// What the admin's Usage page and the member's own share besides the day chart: the month
// picker (the last 13 months, this one first), the split of the month by model, and the
// columns every usage table has (a count, tokens in and out, dollars).
import { type ModelUsage, count, dollars, monthName, recentMonths } from '../usage';

/** The heads of a usage table: the row's name, then `countLabel`, tokens and dollars. */
export function FigureHeads({ name, countLabel }: { name: string; countLabel: string }) {
  return (
    <tr>
      <th scope="col">{name}</th>
      <th scope="col">{countLabel}</th>
      <th scope="col">Input tokens</th>
      <th scope="col">Output tokens</th>
      <th scope="col">Dollars</th>
    </tr>
  );
}

/** A usage row's figures, under the heads FigureHeads draws. */
export function FigureCells(f: { countLabel: string; n: number; input: number; output: number; usd: number }) {
  return (
    <>
      <td data-label={f.countLabel}>{count(f.n)}</td>
      <td data-label="Input tokens">{count(f.input)}</td>
      <td data-label="Output tokens">{count(f.output)}</td>
      <td data-label="Dollars">{dollars(f.usd)}</td>
    </>
  );
}

export function MonthPicker({ id, month, pick }: { id: string; month: string; pick: (month: string) => void }) {
  return (
    <div class="row month-picker">
      <label for={id}>Month</label>
      <select id={id} value={month} onChange={(e) => pick((e.target as HTMLSelectElement).value)}>
        {recentMonths(new Date()).map((m) => (
          <option key={m} value={m}>
            {monthName(m)}
          </option>
        ))}
      </select>
    </div>
  );
}

export function ModelTable({ month, models }: { month: string; models: ModelUsage[] }) {
  if (models.length === 0) return <p class="hint">No model was called in {monthName(month)}.</p>;
  return (
    <table class="stack numbers">
      <caption class="visually-hidden">Calls to each model in {monthName(month)}, most dollars first</caption>
      <thead>
        <FigureHeads name="Model" countLabel="Calls" />
      </thead>
      <tbody>
        {models.map((m) => (
          <tr key={m.model}>
            <th scope="row">{m.model}</th>
            <FigureCells countLabel="Calls" n={m.calls} input={m.inputTokens} output={m.outputTokens} usd={m.usd} />
          </tr>
        ))}
      </tbody>
    </table>
  );
}
