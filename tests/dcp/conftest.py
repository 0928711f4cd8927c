import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # spawn children import programs from here
