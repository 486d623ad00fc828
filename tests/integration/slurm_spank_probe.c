/* A test SPANK plugin for the Slurm test cluster (tests/integration/slurm_cluster.py, issue 30):
 * in each hook it appends one line to the file named by its log= argument: the hook, the spank
 * context, getuid/geteuid, its pid, the job/step/task items, and spank_getenv() next to getenv()
 * of SLURM_STEP_GPUS, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL; where the task's
 * process is at hand, its /proc/PID/cgroup. test_slurm_cluster.py builds it with gcc against
 * Debian's /usr/include/slurm/spank.h at test time and reads the facts the joblet plugin needs. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/spank.h>

SPANK_PLUGIN(joblet_probe, 1);

static char probe_log[4096];

static void probe_line(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	int fd = open(probe_log[0] ? probe_log : "/dev/null", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, buf, (size_t)n);
		close(fd);
	}
}

static void probe_cgroup(const char *hook, pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = '|';
	probe_line("%s cgroup pid=%d %s", hook, (int)pid, buf);
}

static void probe(spank_t sp, const char *hook, int ac, char **av)
{
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "log=", 4))
			snprintf(probe_log, sizeof probe_log, "%s", av[i] + 4);
	static const char *vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};
	char env[1024] = "";
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		char v[256];
		spank_err_t e = spank_getenv(sp, vars[i], v, sizeof v);
		const char *pe = getenv(vars[i]);
		size_t l = strlen(env);
		snprintf(env + l, sizeof env - l, " spank:%s=%s getenv:%s=%s", vars[i],
		         e == ESPANK_SUCCESS ? v : (e == ESPANK_ENV_NOEXIST ? "(unset)" : spank_strerror(e)), vars[i],
		         pe ? pe : "(unset)");
	}
	uint32_t job = 0, step = 0, task = 0, gtask = 0;
	spank_err_t ej = spank_get_item(sp, S_JOB_ID, &job);
	spank_err_t es = spank_get_item(sp, S_JOB_STEPID, &step);
	spank_err_t et = spank_get_item(sp, S_TASK_ID, &task);
	spank_err_t eg = spank_get_item(sp, S_TASK_GLOBAL_ID, &gtask);
	probe_line("%s ctx=%d uid=%d euid=%d pid=%d job=%s%u step=%s%u task=%s%u gtask=%s%u%s", hook, (int)spank_context(),
	           (int)getuid(), (int)geteuid(), (int)getpid(), ej ? "err" : "", job, es ? "err" : "", step, et ? "err" : "",
	           task, eg ? "err" : "", gtask, env);
}

int slurm_spank_init(spank_t sp, int ac, char **av) { probe(sp, "init", ac, av); return 0; }
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) { probe(sp, "init_post_opt", ac, av); return 0; }
int slurm_spank_user_init(spank_t sp, int ac, char **av) { probe(sp, "user_init", ac, av); probe_cgroup("user_init", getpid()); return 0; }
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	probe(sp, "task_init_privileged", ac, av);
	probe_cgroup("task_init_privileged", getpid());
	return 0;
}
int slurm_spank_task_init(spank_t sp, int ac, char **av) { probe(sp, "task_init", ac, av); probe_cgroup("task_init", getpid()); return 0; }
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	probe(sp, "task_post_fork", ac, av);
	pid_t pid = 0;
	if (spank_get_item(sp, S_TASK_PID, &pid) == ESPANK_SUCCESS)
		probe_cgroup("task_post_fork(task)", pid);
	return 0;
}
int slurm_spank_task_exit(spank_t sp, int ac, char **av) { probe(sp, "task_exit", ac, av); return 0; }
int slurm_spank_exit(spank_t sp, int ac, char **av) { probe(sp, "exit", ac, av); return 0; }
