"""Framework integrations. Only modules under this package import a framework;
each is registered under the ``opentelemetry_instrumentor`` entry point and
picked up by ``orch_otel.instrument()`` when its framework is installed."""
