"""A lit test format: tests that say `JIT-LEVELS: x86-64-v3 x86-64-v4` also
run once per level, as `FILE@LEVEL`, with DS_JIT_CPU=LEVEL and their own %t;
a level this CPU cannot run is reported unsupported."""
import copy
import re

import lit.formats
import lit.Test


class LevelTest(lit.Test.Test):
    """`FILE@LEVEL`: FILE's RUN lines with DS_JIT_CPU=LEVEL, in its own %t."""

    def __init__(self, test, level, config):
        name = test.path_in_suite[-1] + "@" + level
        super().__init__(test.suite, test.path_in_suite[:-1] + (name,), config)
        self.source = test.getSourcePath()

    def getSourcePath(self):
        return self.source


class ShTestAtLevels(lit.formats.ShTest):
    """A test saying `JIT-LEVELS: x86-64-v3 x86-64-v4` also runs once per
    level, with code generated for it; a level this CPU cannot run is
    reported unsupported."""

    def getTestsForPath(self, suite, path_in_suite, lit_config, local_config):
        for test in super().getTestsForPath(suite, path_in_suite, lit_config,
                                            local_config):
            yield test
            for level in self.levels(test.getSourcePath()):
                config = copy.copy(local_config)
                config.environment = dict(local_config.environment,
                                          DS_JIT_CPU=level)
                config.unsupported = (local_config.unsupported or
                                      level not in config.available_features)
                yield LevelTest(test, level, config)

    @staticmethod
    def levels(path):
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"\s*JIT-LEVELS:(.*)", line)
                if m:
                    return m.group(1).split()
        return []
