"""The CPU's model name, as the bench scripts and the PyTorch peer write it into their results."""
import platform


def cpu_model(unknown="unknown"):
    """/proc/cpuinfo's first "model name", else the platform's processor, else `unknown`."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or unknown
