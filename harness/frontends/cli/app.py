"""The ``racecheck`` click group: every input error, click's usage errors included, becomes one line on stderr
with exit status 2, never a traceback; the commands themselves live one per module beside this one."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click
from racecheck.errors import InternalError
from racecheck.frontends import functions, parallel
from racecheck.frontends.cli.cells import InputError, one_line
from racecheck.frontends.cli.demo import demo
from racecheck.frontends.cli.explore import explore_cmd
from racecheck.frontends.cli.gate import gate
from racecheck.frontends.cli.replay import replay_cmd
from racecheck.frontends.cli.run import list_scenarios, run
from racecheck.report.results import racecheck_version

__racecheck_engine__ = True

INTERNAL_ERROR_STATUS = 3  # racecheck itself failed (0: no race, 1: race found, 2: bad input)


def _fail_input(message: str) -> NoReturn:
    click.echo(f"racecheck: error: {one_line(message)}", err=True)
    sys.exit(2)


class _Cli(click.Group):
    """A click group whose usage errors, like every other input error, are one line and exit status 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            commands = ", ".join(self.list_commands(click.Context(self)))
            _fail_input(f"missing command ({commands}; see racecheck --help)")
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "racecheck"
            _fail_input(f"{exc.format_message()} (see {where} --help)")
        except click.ClickException as exc:
            _fail_input(exc.format_message())
        except click.exceptions.Abort:
            click.echo("racecheck: aborted", err=True)
            sys.exit(130)
        except InputError as exc:
            _fail_input(str(exc))
        except parallel.RunnerError as exc:
            _fail_input(str(exc))
        except InternalError as exc:  # racecheck's own failure: its traceback, and a status of its own
            click.echo(f"racecheck: {exc}", err=True)
            sys.exit(INTERNAL_ERROR_STATUS)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - never a traceback at the user; RACECHECK_DEBUG=1 shows it
            if os.environ.get("RACECHECK_DEBUG"):
                raise
            _fail_input(f"internal error: {type(exc).__name__}: {exc} (RACECHECK_DEBUG=1 shows the traceback)")
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=_Cli)
@click.version_option(version=racecheck_version() or "unknown (not installed)", message="racecheck %(version)s")
def main() -> None:
    """racecheck: deterministic, replayable thread-race testing for checkpointing code, and for any function."""
    functions.cwd_on_path()  # targets, catalogues and functions import from here, as with python -m


for _command in (list_scenarios, run, explore_cmd, replay_cmd, gate, demo):
    main.add_command(_command)
