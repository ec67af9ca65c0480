// What the admin's Usage page and the member's own share besides the day chart: the month
// picker (the last 13 months, this one first) and the split of the month by model.
import { type ModelUsage, count, dollars, monthName, recentMonths } from '../usage';

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
        <tr>
          <th scope="col">Model</th>
          <th scope="col">Calls</th>
          <th scope="col">Input tokens</th>
          <th scope="col">Output tokens</th>
          <th scope="col">Dollars</th>
        </tr>
      </thead>
      <tbody>
        {models.map((m) => (
          <tr key={m.model}>
            <th scope="row">{m.model}</th>
            <td data-label="Calls">{count(m.calls)}</td>
            <td data-label="Input tokens">{count(m.inputTokens)}</td>
            <td data-label="Output tokens">{count(m.outputTokens)}</td>
            <td data-label="Dollars">{dollars(m.usd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
