"""What the ``racecheck`` console script does, for an installation without one: run as a script file, so its own
folder, not the working directory, is first on sys.path."""

from racecheck.frontends.cli import main

if __name__ == "__main__":
    main()
