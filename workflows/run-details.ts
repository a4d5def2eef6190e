import { setCurrentDetails } from '@temporalio/workflow';
import type { RunProgress } from './messages';
import { versionsText } from '../contracts/selfplay';

/** The UI's current details: the run's state and a table of its latest iterations. */
export function showDetails(progress: RunProgress): void {
  const roles = [...new Set(progress.recent.flatMap((r) => Object.keys(r.meanRewardByRole)))].sort();
  const lines = [
    `**${progress.state}** · iteration ${progress.iteration}/${progress.iterations} · ` +
      `last committed ${progress.lastCommitted} · ${versionsText(progress.versions)}`,
  ];
  if (progress.recent.length) {
    lines.push(
      '',
      `| iteration | valid-task rate | ${roles.map((r) => `reward ${r}`).join(' | ')}${roles.length ? ' | ' : ''}rows | seconds |`,
      `|---|---|${roles.map(() => '---|').join('')}---|---|`,
      ...progress.recent.map(
        (r) =>
          `| ${r.iteration} | ${r.validTaskRate.toFixed(3)} | ` +
          roles.map((role) => `${r.meanRewardByRole[role]?.toFixed(3) ?? '–'} | `).join('') +
          `${r.rows} | ${r.seconds.toFixed(1)} |`,
      ),
    );
  }
  setCurrentDetails(lines.join('\n'));
}
