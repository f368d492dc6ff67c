"""Each JupyterLab on the hub shuts down a kernel that has sent nothing for a while.

A kernel stuck in a loop stays "busy" and would hold a core all day: it is shut down too
(cull_busy), even with its notebook open (cull_connected). A kernel that prints, as every
training cell of the course does, is never silent that long. Only the kernel goes: the
learner's server, files and other kernels stay.
"""
import os

c = get_config()  # noqa: F821 (Jupyter defines it)
idle_seconds = int(os.environ.get("IPU_KERNEL_IDLE_SECONDS", "1800"))
c.MappingKernelManager.cull_idle_timeout = idle_seconds
c.MappingKernelManager.cull_interval = max(idle_seconds // 6, 1)
c.MappingKernelManager.cull_busy = True
c.MappingKernelManager.cull_connected = True
