"""Why a run is as fast as it is: profiles, host time, generated code and traces."""
