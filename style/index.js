import './base.css';
import './review.css';
import './locks.css';
