package io.memwire.flight;

import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightProducer.StreamListener;
import org.apache.arrow.flight.PollInfo;

/**
 * The FlightInfo-bearing answers of an {@link RdmaFlightProducer} (single infos, listings, poll
 * results) with the data-plane location added to every endpoint by a {@link FlightInfoDecorator};
 * unchanged when the data plane is off.
 */
final class DecoratedInfos {
  /** Adds the data-plane location; null when the data plane is off. */
  private final FlightInfoDecorator decorator;

  DecoratedInfos(FlightInfoDecorator decorator) {
    this.decorator = decorator;
  }

  /** The same info with the data-plane location after each endpoint's own locations. */
  FlightInfo info(FlightInfo info) {
    return decorator == null ? info : decorator.decorate(info);
  }

  /** A listener that passes each listed info on decorated. */
  StreamListener<FlightInfo> listing(StreamListener<FlightInfo> listener) {
    return new StreamListener<>() {
      @Override
      public void onNext(FlightInfo val) {
        listener.onNext(info(val));
      }

      @Override
      public void onError(Throwable t) {
        listener.onError(t);
      }

      @Override
      public void onCompleted() {
        listener.onCompleted();
      }
    };
  }

  /** The same poll result with its info (when it has one) decorated. */
  PollInfo poll(PollInfo p) {
    if (p == null || p.getFlightInfo() == null) {
      return p;
    }
    return new PollInfo(
        info(p.getFlightInfo()),
        p.getFlightDescriptor().orElse(null),
        p.getProgress().orElse(null),
        p.getExpirationTime().orElse(null));
  }
}
