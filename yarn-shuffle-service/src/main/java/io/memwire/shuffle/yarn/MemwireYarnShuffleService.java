package io.memwire.shuffle.yarn;

import io.memwire.shuffle.service.ServiceConfig;
import io.memwire.shuffle.service.ServiceSettings;
import io.memwire.shuffle.service.ShuffleService;
import io.memwire.transfer.TransferConfigException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the Memwire shuffle service ({@link ShuffleService}) inside a YARN NodeManager, so the map
 * outputs of a node's Spark executors stay readable one-sided after the executors are released. The
 * NodeManager starts it with its own start and stops it with its own stop; when YARN reports that
 * an application finished, every attempt of it is ended here at once (outputs deregistered and
 * deleted) instead of waiting for the service's driver-liveness timeout.
 *
 * <p>Setup, in {@code yarn-site.xml} of every NodeManager:
 *
 * <pre>{@code
 * <property>
 *   <name>yarn.nodemanager.aux-services</name>
 *   <value>mapreduce_shuffle,memwire_shuffle</value>
 * </property>
 * <property>
 *   <name>yarn.nodemanager.aux-services.memwire_shuffle.class</name>
 *   <value>io.memwire.shuffle.yarn.MemwireYarnShuffleService</value>
 * </property>
 * <property>
 *   <name>memwire.shuffle.service.socket</name>
 *   <value>/var/run/memwire/shuffle.sock</value>
 * </property>
 * <property>
 *   <name>memwire.shuffle.service.dir</name>
 *   <value>/data1/yarn/local/memwire-shuffle-service</value>
 * </property>
 * }</pre>
 *
 * The jar ({@code memwire-yarn-shuffle-service-<version>.jar}, which carries the shuffle service,
 * block-transfer and DiSNI's Java classes) goes on the NodeManager's classpath (for example {@code
 * share/hadoop/yarn/lib/}), or is named by {@code
 * yarn.nodemanager.aux-services.memwire_shuffle.classpath} to load it in its own class loader.
 * Hadoop and SLF4J come from the NodeManager. Every key starting with {@value ServiceConfig#PREFIX}
 * in the NodeManager's configuration is the service's (its own keys, and the transfer node's under
 * {@value ServiceConfig#TRANSFER_PREFIX}); an unknown or bad one fails the NodeManager's start,
 * naming the key.
 *
 * <p>The service takes an output over by hard-linking the executor's files into its {@code dir}, so
 * {@code dir} must be on the same filesystem as the NodeManager local directories the executors
 * write their shuffle files in ({@code yarn.nodemanager.local-dirs}); outputs on another filesystem
 * are refused and stay served by their executor. Executors must run as a user listed in {@code
 * memwire.shuffle.service.allowedUsers} (by default the NodeManager's own user, which is right with
 * the DefaultContainerExecutor), and the socket must be set explicitly on both sides: YARN gives
 * each container its own {@code java.io.tmpdir}, so the default path would differ.
 *
 * <p>Spark's application id on YARN is the YARN application id, and executors register as {@code
 * <applicationId>_<attemptId>}, so {@link #stopApplication} ends every attempt of the application.
 * With NodeManager recovery on ({@code yarn.nodemanager.recovery.enabled}), the service keeps its
 * recovery store in the recovery path the NodeManager gives it (unless {@code
 * memwire.shuffle.service.recoveryPath} is set): a NodeManager stop keeps the outputs and a
 * restarted one serves them again. Without it, a restarted NodeManager serves none of the earlier
 * outputs, and Spark reruns the map stages that need them.
 */
public final class MemwireYarnShuffleService extends AuxiliaryService {
  /** The name the NodeManager knows this service by ({@code yarn.nodemanager.aux-services}). */
  public static final String SERVICE_NAME = "memwire_shuffle";

  private static final Logger LOG = LoggerFactory.getLogger(MemwireYarnShuffleService.class);

  private ServiceConfig config;
  // Set on the NodeManager's start thread, read by its event threads (stopApplication).
  private volatile ShuffleService service;

  /** Created by the NodeManager through reflection, once per NodeManager. */
  public MemwireYarnShuffleService() {
    super(SERVICE_NAME);
  }

  /**
   * Reads and validates every {@value ServiceConfig#PREFIX} key of the NodeManager's configuration.
   *
   * @throws io.memwire.transfer.TransferConfigException naming the first unknown or bad key
   */
  @Override
  protected void serviceInit(Configuration conf) throws Exception {
    Map<String, String> props = new TreeMap<>();
    // getPropsWithPrefix expands ${...} references as Configuration.get does; XML values often
    // carry line breaks and indentation, which no Memwire value may contain.
    conf.getPropsWithPrefix(ServiceSettings.PREFIX)
        .forEach((k, v) -> props.put(ServiceSettings.PREFIX + k, v.trim()));
    config = ServiceConfig.fromProperties(props);
    org.apache.hadoop.fs.Path recovery = getRecoveryPath();
    if (recovery != null && config.recoveryPath().isEmpty()) {
      // NodeManager recovery is on: the store goes where the NodeManager keeps this service's
      // state (a directory it created for it, owner-only), unless recoveryPath names another.
      config = config.withRecoveryPath(java.nio.file.Path.of(recovery.toUri().getPath()));
    }
    if (config.httpPort().isPresent()) {
      String key = ServiceSettings.PREFIX + ServiceSettings.HTTP_PORT.name();
      throw new TransferConfigException(
          TransferConfigException.Problem.UNUSABLE,
          key,
          key
              + " is not available in the YARN auxiliary service: its jar carries no Prometheus "
              + "client (the NodeManager exports its own metrics); remove the key");
    }
    LOG.info(
        "{}: {} settings from the NodeManager configuration: {}",
        SERVICE_NAME,
        props.size(),
        config);
    if (config.recoveryPath().isEmpty()) {
      LOG.info(
          "{}: NodeManager recovery is off and {} unset: after a restart the service serves none "
              + "of the earlier map outputs and Spark reruns the map stages that need them",
          SERVICE_NAME,
          ServiceSettings.PREFIX + ServiceSettings.RECOVERY_PATH.name());
    }
    super.serviceInit(conf);
  }

  /**
   * Starts the shuffle service: empties its directory, starts its transfer node, listens on its
   * socket.
   */
  @Override
  protected void serviceStart() throws Exception {
    service = ShuffleService.start(config);
    super.serviceStart();
  }

  /**
   * Closes the shuffle service, the socket removed: every application ended and its files deleted,
   * or, with recovery on, its outputs kept for the restarted NodeManager.
   */
  @Override
  protected void serviceStop() throws Exception {
    ShuffleService s = service;
    // Also called after a failed init or start, with nothing started.
    if (s != null) {
      s.close();
      LOG.info("{}: stopped", SERVICE_NAME);
    }
    super.serviceStop();
  }

  /**
   * Called only for applications whose containers ask for this service by name; Spark's executors
   * do not, they register over the socket.
   */
  @Override
  public void initializeApplication(ApplicationInitializationContext context) {
    LOG.debug(
        "{}: application {} of user {} initialized",
        SERVICE_NAME,
        context.getApplicationId(),
        context.getUser());
  }

  /**
   * Ends every attempt of the application that YARN reports finished on this node (the NodeManager
   * reports every application to every aux service, Memwire's or not).
   */
  @Override
  public void stopApplication(ApplicationTerminationContext context) {
    ShuffleService s = service;
    String app = context.getApplicationId().toString();
    if (s == null) {
      LOG.debug("{}: application {} stopped before the service started", SERVICE_NAME, app);
      return;
    }
    // The service logs each attempt it ends, with what it held.
    int ended = s.endApplication(app);
    LOG.debug("{}: application {} stopped; {} attempts ended", SERVICE_NAME, app, ended);
  }

  /** No data for the application masters: executors find the service by its socket. */
  @Override
  public ByteBuffer getMetaData() {
    return ByteBuffer.allocate(0);
  }

  /** Nothing per container: executors register themselves over the socket. */
  @Override
  public void initializeContainer(ContainerInitializationContext context) {}

  /**
   * Nothing per container: a released executor's outputs stay served until the application ends.
   */
  @Override
  public void stopContainer(ContainerTerminationContext context) {}

  /** The running shuffle service, or null before start. */
  ShuffleService shuffleService() {
    return service;
  }
}
