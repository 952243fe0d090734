// The OpenTelemetry Collector the tracing tests export to: the collector's own command
// (go.opentelemetry.io/collector/otelcol) with only the components the tests need, so it
// builds in minutes on 2 cores: the OTLP receiver (OTLP/HTTP and gRPC) and the file exporter,
// which writes every batch of spans it receives as one line of OTLP JSON that a test reads
// back. scripts/test-env/otel-collector.sh builds, configures and starts it.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{
		Receivers: receivers,
		Exporters: exporters,
		// The collector's own logs (to stderr, kept in otelcol.log) and no metrics.
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "vnfm-otelcol",
			Description: "OpenTelemetry Collector (OTLP receiver, file exporter) for the VNFM's tests",
			Version:     "test",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				// `${VAR}` in the configuration is an environment variable, as in the
				// collector's own distributions.
				DefaultScheme: "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
