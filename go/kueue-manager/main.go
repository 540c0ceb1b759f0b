// kueue-manager: Kueue's own controllers, scheduler and topology-aware scheduling (TAS), wired
// from the packages of the Kueue release that go.mod pins, with only the batch/v1 Job
// integration linked.
//
// Kueue's cmd/kueue links every job integration, and through the Kubeflow ones a
// sigs.k8s.io/scheduler-plugins version the module proxy does not serve; the manager here is the
// smallest one Kueue's own integration suites also build: the core controllers (queues, flavors,
// topologies, workloads), the scheduler, the TAS controllers (the topology ungater among them),
// the webhooks, and the Job reconciler. Everything it decides is Kueue's code; this file only
// connects the pieces, as cmd/kueue does.
//
// Usage: KUBECONFIG=... kueue-manager --config kueue-config.yaml
//
// The configuration file is Kueue's own (config.kueue.x-k8s.io/v1beta2 Configuration). The
// webhook server serves with the certificate in its webhook.certDir (tls.crt, tls.key); Kueue's
// internal certificate management must be off (it needs an in-cluster Secret and Service). The
// metrics and health endpoints are off. tjap's harness (tjap.placement.k8s.kueue) writes the
// configuration and the certificate and starts this program.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/tas"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/metrics"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/util/kubeversion"
	"sigs.k8s.io/kueue/pkg/webhooks"

	// The one job integration linked: batch/v1 Job.
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/job"
)

var log = ctrl.Log.WithName("kueue-manager")

func main() {
	configFile := flag.String("config", "", "Kueue's Configuration file (config.kueue.x-k8s.io/v1beta2)")
	featureGates := flag.String("feature-gates", "", "Kueue feature gates, key=value,...")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zap.Options{TimeEncoder: zapcore.RFC3339NanoTimeEncoder})))
	if err := run(*configFile, *featureGates); err != nil {
		fmt.Fprintf(os.Stderr, "kueue-manager: %v\n", err)
		os.Exit(1)
	}
}

func run(configFile, featureGates string) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	utilruntime.Must(kueuev1beta1.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))
	if err := jobframework.ForEachIntegration(func(_ string, cb jobframework.IntegrationCallbacks) error {
		if cb.AddToScheme != nil {
			return cb.AddToScheme(scheme)
		}
		return nil
	}); err != nil {
		return err
	}

	options, cfg, err := config.Load(scheme, configFile)
	if err != nil {
		return fmt.Errorf("the configuration %q: %w", configFile, err)
	}
	if cfg.InternalCertManagement != nil && cfg.InternalCertManagement.Enable != nil && *cfg.InternalCertManagement.Enable {
		return fmt.Errorf("the configuration must set internalCertManagement.enable: false (the webhook certificate comes from webhook.certDir)")
	}
	if featureGates != "" {
		err = utilfeature.DefaultMutableFeatureGate.Set(featureGates)
	} else {
		err = utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates)
	}
	if err != nil {
		return fmt.Errorf("the feature gates: %w", err)
	}
	if !features.Enabled(features.TopologyAwareScheduling) {
		return fmt.Errorf("the feature gate TopologyAwareScheduling is off; this manager exists for it")
	}
	config.AddWebhookSettingsTo(&options, &cfg)
	options.Metrics = metricsserver.Options{BindAddress: "0"}
	options.HealthProbeBindAddress = "0"

	kubeConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no kubeconfig (set KUBECONFIG): %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(kubeConfig, options)
	if err != nil {
		return fmt.Errorf("the manager: %w", err)
	}

	cache := schdcache.New(mgr.GetClient())
	requeuer := qcache.NewRequeuer()
	if err := mgr.Add(requeuer); err != nil {
		return err
	}
	expectations := preemptexpectations.New()
	queues := qcache.NewManager(mgr.GetClient(), cache, requeuer, qcache.WithPreemptionExpectations(expectations))

	if err := indexes(ctx, mgr, &cfg); err != nil {
		return fmt.Errorf("the indexes: %w", err)
	}
	versions, err := serverVersion(mgr, kubeConfig)
	if err != nil {
		return err
	}
	var labels *metrics.CustomLabels
	if name, err := core.SetupControllers(mgr, queues, cache, &cfg, nil, expectations, labels); err != nil {
		return fmt.Errorf("the core controller %s: %w", name, err)
	}
	if name, err := tas.SetupControllers(mgr, queues, cache, &cfg, nil); err != nil {
		return fmt.Errorf("the TAS controller %s: %w", name, err)
	}
	if err := jobframework.SetupControllers(ctx, mgr, log,
		jobframework.WithManageJobsWithoutQueueName(cfg.ManageJobsWithoutQueueName),
		jobframework.WithWaitForPodsReady(cfg.WaitForPodsReady),
		jobframework.WithKubeServerVersion(versions),
		jobframework.WithEnabledFrameworks(cfg.Integrations.Frameworks),
		jobframework.WithManagerName(constants.KueueName),
		jobframework.WithCache(cache),
		jobframework.WithQueues(queues),
		jobframework.WithObjectRetentionPolicies(cfg.ObjectRetentionPolicies),
	); err != nil {
		return fmt.Errorf("the job controllers: %w", err)
	}
	if name, err := webhooks.Setup(mgr, nil); err != nil {
		return fmt.Errorf("the webhook %s: %w", name, err)
	}
	go queues.CleanUpOnContext(ctx)
	go cache.CleanUpOnContext(ctx)
	if err := mgr.Add(scheduler.New(queues, cache, mgr.GetClient(),
		mgr.GetEventRecorderFor(constants.AdmissionName),
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing),
		scheduler.WithPreemptionExpectations(expectations),
	)); err != nil {
		return fmt.Errorf("the scheduler: %w", err)
	}
	log.Info("starting", "frameworks", cfg.Integrations.Frameworks)
	return mgr.Start(ctx)
}

// indexes: the field indexes Kueue's controllers and the TAS cache look objects up by.
func indexes(ctx context.Context, mgr ctrl.Manager, cfg *configapi.Configuration) error {
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := tasindexer.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return jobframework.SetupIndexes(ctx, mgr.GetFieldIndexer(),
		jobframework.WithEnabledFrameworks(cfg.Integrations.Frameworks))
}

// serverVersion: the API server's version, which the Job integration asks for.
func serverVersion(mgr ctrl.Manager, kubeConfig *rest.Config) (*kubeversion.ServerVersionFetcher, error) {
	client, err := discovery.NewDiscoveryClientForConfig(kubeConfig)
	if err != nil {
		return nil, fmt.Errorf("the discovery client: %w", err)
	}
	fetcher := kubeversion.NewServerVersionFetcher(client)
	if err := mgr.Add(fetcher); err != nil {
		return nil, err
	}
	if err := fetcher.FetchServerVersion(); err != nil {
		return nil, fmt.Errorf("the API server's version: %w", err)
	}
	return fetcher, nil
}
