import { readFileSync } from 'node:fs';

/**
 * A process's parent and CPU ticks (user + system, in USER_HZ) from /proc/<pid>/stat, or null when
 * it is gone. The fields are counted after "(comm) ", since a command name may hold spaces:
 * ppid is field 4 of the file, utime and stime fields 14 and 15.
 */
export function procStat(pid: number | string): { ppid: number; ticks: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}
